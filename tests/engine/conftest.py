"""Engine tests share one cached tiny model and one engine per process (benchctl.models.testing)."""

from benchctl.models.testing import engine_fixture, tiny_model_fixture

tiny_model = tiny_model_fixture()
engine = engine_fixture()
