"""The report's HTML page opened in headless Chromium: a screenshot is taken, the tables are there, the first
one is the verdict and fits on the first screen (1400x1000), every image loaded.  Chromium (Debian's `chromium`)
is installed in set-up when missing and possible (root + apt-get);
otherwise the test is skipped with the reason (shown by `pytest -ra`)."""

import os
import re
import shutil
import subprocess

import pytest

from benchctl.report import ReportConfig, build_report

from .fixtures import train_config, write_matrix

_PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  document.body.setAttribute('data-images', String(imgs.length));
  document.body.setAttribute('data-images-loaded', String(imgs.filter(i => i.complete && i.naturalWidth > 0).length));
  document.body.setAttribute('data-table-rows', String(document.querySelectorAll('table tbody tr').length));
  const first = document.querySelector('table');
  document.body.setAttribute('data-first-table-is-verdict', String(Number(first.classList.contains('verdict'))));
  document.body.setAttribute('data-verdict-bottom', String(Math.round(first.getBoundingClientRect().bottom)));
});
</script>"""


def _install_chromium() -> str | None:
    """Path of a chromium binary, installing Debian's package when possible; None with a printed reason."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print("chromium missing and not installable here (need root and apt-get)")
        return None
    install = ["apt-get", "install", "-y", "chromium"]
    for cmd in (install, ["apt-get", "update"], install):  # the package lists may be stale or absent
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=900, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        )
        if cmd[1] == "install" and done.returncode == 0:
            break
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def chromium():
    try:
        path = _install_chromium()
    except (OSError, subprocess.SubprocessError) as exc:
        path, why = None, f"installing chromium failed: {exc}"
    else:
        why = "chromium is not installed and `apt-get install -y chromium` did not provide it"
    if path is None:
        print(why)
        pytest.skip(why)
    return path


def _chromium(binary: str, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120)


def _write_grpo_and_ha_dw(folder, seeds) -> None:
    """A matrix of GRPO and HA-DW, six questions x four samples a run, HA-DW one sample ahead on most questions."""
    cells = [
        (
            f"{est}-s{seed}",
            train_config(est, seed),
            {f"q{i}": [j < (i + seed + (est == "ha_dw")) % 5 for j in range(4)] for i in range(6)},
        )
        for est in ("grpo", "ha_dw")
        for seed in seeds
    ]
    write_matrix(folder, cells)


@pytest.mark.slow
def test_report_page_renders_in_headless_chromium_with_its_table_and_every_image(chromium, tmp_path):
    _write_grpo_and_ha_dw(tmp_path / "results", seeds=(1, 2))
    result = build_report(
        ReportConfig(inputs=(str(tmp_path / "results"),), out=str(tmp_path / "rep"), rliable_reps=100)
    )
    page = tmp_path / "rep" / "report.html"
    text = page.read_text()
    assert "src='data:image/png;base64," in text and not re.search(r"src=['\"](?!data:)", text)  # self-contained
    shot = tmp_path / "shot.png"
    done = _chromium(chromium, f"--screenshot={shot}", "--window-size=1400,2400", page.as_uri())
    assert shot.is_file() and shot.read_bytes()[:4] == b"\x89PNG", done.stderr[-2000:]
    probed = tmp_path / "probed.html"
    probed.write_text(text.replace("</body>", _PROBE + "</body>"))
    dom = _chromium(
        chromium, "--virtual-time-budget=10000", "--window-size=1400,1000", "--dump-dom", probed.as_uri()
    ).stdout
    attrs = dict(re.findall(r'data-([a-z-]+)="(\d+)"', dom))
    assert int(attrs["images"]) == len(result.figures) >= 4
    assert attrs["images-loaded"] == attrs["images"]
    assert int(attrs["table-rows"]) >= len(result.tables["main"]) + len(result.tables["verdict"]) > 0
    assert attrs["first-table-is-verdict"] == "1" and 0 < int(attrs["verdict-bottom"]) <= 1000


def test_a_difference_cell_puts_its_mde_on_a_line_of_its_own_so_the_verdict_fits_the_screen(tmp_path):
    _write_grpo_and_ha_dw(tmp_path / "results", seeds=(1, 2, 3))
    build_report(ReportConfig(inputs=(str(tmp_path / "results"),), out=str(tmp_path / "rep"), rliable_reps=100))
    verdict = re.search(r"<table class='verdict'>.*?</table>", (tmp_path / "rep" / "report.html").read_text()).group(0)
    assert "<br>(mde " in verdict and " (mde " not in verdict
