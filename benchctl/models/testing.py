"""Pytest fixture factories for tests that need the tiny model or a vLLM engine (no download, no GPU).

    # tests/<dir>/conftest.py
    from benchctl.models.testing import engine_fixture, tiny_model_fixture
    tiny_model = tiny_model_fixture()   # session-scoped Path of the cached default tiny model
    engine = engine_fixture()           # session-scoped Engine on `tiny_model`; mark its tests @pytest.mark.vllm

One `Engine` per process is the rule (start-up ~5-15 s on 2 cores; `benchctl.engine` shares LLM objects by
construction arguments anyway). A test that calls `engine.load_weights` must restore the original weights
(e.g. `engine.load_weights(original)` in a `finally`), since later tests share the engine.
"""

from __future__ import annotations

import pytest

from benchctl.models.cache import cached_tiny_model

TEST_KV_CACHE_GIB = 0.125  # tiny model: 2 KiB of KV per token, so 64k tokens; keeps parallel test runs small


def tiny_model_fixture(scope: str = "session", **options):
    """A fixture returning the cached tiny-model folder for `options` (TinyModelConfig fields)."""

    @pytest.fixture(scope=scope)
    def tiny_model():
        return cached_tiny_model(**options)

    return tiny_model


def engine_fixture(model_fixture: str = "tiny_model", scope: str = "session", **engine_options):
    """A fixture returning an `Engine` on the folder given by the fixture named `model_fixture`."""

    @pytest.fixture(scope=scope)
    def engine(request):
        from benchctl.engine import Engine

        options = {"kv_cache_gib": TEST_KV_CACHE_GIB, **engine_options}
        return Engine(request.getfixturevalue(model_fixture), **options)

    return engine
