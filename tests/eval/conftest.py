"""Fixtures for eval tests: the engine owner's cached tiny model (built once per parameter set, no download)."""

from benchctl.models.testing import tiny_model_fixture

tiny_model = tiny_model_fixture()

# MQR prompts run to ~1000 characters (= tokens for the char-level model): a random-init tiny model with a wider
# context exercises the augment plumbing (its outputs are garbage by design).
wide_tiny_model = tiny_model_fixture(max_position_embeddings=2048, sft_steps=0)
