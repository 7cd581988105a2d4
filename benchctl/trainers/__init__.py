"""The RLVR trainer behind `benchctl train` (loop: `benchctl.trainers.loop`; config: `.config`).

from benchctl.trainers import TrainConfig, build_config, train
result = train(build_config(flag_values={"estimator": "avspo", "steps": 20}))
"""

from benchctl.trainers.config import RECIPES, TrainConfig, build_config

__all__ = ["RECIPES", "TrainConfig", "build_config", "train"]


def train(config, display=None):
    """Run or resume one training run (`benchctl.trainers.loop.train`; torch and vLLM load on first call)."""
    from benchctl.trainers.loop import train as _train

    return _train(config, display=display)
