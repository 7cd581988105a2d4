"""Trainer tests share the cached tiny model (benchctl.models.testing)."""

from benchctl.models.testing import tiny_model_fixture

tiny_model = tiny_model_fixture()
