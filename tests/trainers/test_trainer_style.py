"""The trainer's shape (style.md items 3, 17): one loop file under 400 lines with its sections in order, no
branch on an estimator's name, and no advantage arithmetic on rewards in the loop."""

import re
from pathlib import Path

import benchctl.trainers as trainers

PKG = Path(trainers.__file__).parent
LOOP = (PKG / "loop.py").read_text()


def test_loop_file_is_at_most_400_lines():
    assert len(LOOP.splitlines()) <= 400


def test_loop_sections_come_in_the_order_rollout_reward_advantage_loss_update_sync_log():
    rules = re.findall(r"# ---- ([a-z +]+?) [(-]", LOOP)
    assert rules == ["rollout + reward", "advantage", "loss + update", "sync", "log"]


def test_no_branch_on_an_estimator_name_anywhere_in_the_trainer():
    for path in PKG.glob("*.py"):
        text = path.read_text()
        assert not re.search(r"estimator(\.name|\.label)?\s*(==|!=|\bin\b)\s*[\"'(\[]", text), path.name
        assert not re.search(
            r"\.(name|label)\s*(==|!=|in)\s*[\"'(\[]\w*(grpo|dapo|avspo|oar|dgpo|ha_dw|a_grae)", text
        ), path.name


def test_loop_computes_no_reward_statistics_itself():
    assert not re.search(r"rewards?\.(mean|std)\(", LOOP)
    assert "est.advantages(" in LOOP or "estimator.advantages(" in LOOP
