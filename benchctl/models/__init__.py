"""Local models for tests, demos and CPU runs: the tiny character-level Qwen2 and its build-once cache.

from benchctl.models import build_tiny_model, cached_tiny_model
path = cached_tiny_model()            # ~/.cache/benchctl/tiny-<key>, built on first use (~15 s on 2 cores)
build_tiny_model("out/tiny", sft_steps=100, seed=0)
"""

from benchctl.models.cache import cached_tiny_model, default_cache_dir
from benchctl.models.tiny import TinyModelConfig, build_tiny_model

__all__ = ["TinyModelConfig", "build_tiny_model", "cached_tiny_model", "default_cache_dir"]
