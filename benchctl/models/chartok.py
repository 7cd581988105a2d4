"""A character-level tokenizer for the tiny test model, built with `tokenizers` (no download, no training).

Vocabulary [our choice]: three specials (`<pad>`=0, `<eos>`=1, `<unk>`=2), then newline and every printable
ASCII character (space .. '~'), one token each, so any prompt a task writes in plain ASCII round-trips exactly
and arithmetic text like "3+5+2=10" is one token per character. Characters outside that set map to `<unk>`.
There is no BOS token, no post-processor (nothing is added around a prompt) and no chat template, so
`Engine.render` falls back to `task.prompt_text`.

Saved as `tokenizer.json` + `tokenizer_config.json`, which both `transformers.AutoTokenizer` and vLLM read from a
local folder.
"""

from __future__ import annotations

import json
from pathlib import Path

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
SPECIALS = (PAD, EOS, UNK)
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))  # newline + printable ASCII


def char_vocab() -> dict[str, int]:
    """Token -> id: specials first, then the characters in `CHARS` order."""
    return {tok: i for i, tok in enumerate([*SPECIALS, *CHARS])}


def build_char_tokenizer():
    """A `tokenizers.Tokenizer` that splits text into single characters (WordLevel over `char_vocab()`)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab=char_vocab(), unk_token=UNK))
    # every character (newline included: [\s\S]) becomes its own pre-token; Fuse joins them back without spaces
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(list(SPECIALS))
    return tok


def save_char_tokenizer(out_dir: Path, model_max_length: int) -> None:
    """Write `tokenizer.json` and `tokenizer_config.json` into `out_dir`.

    `tokenizer_class` is "PreTrainedTokenizerFast" [our choice]: transformers 4.x and 5.x both resolve it to
    their `tokenizer.json`-backed class, so the folder loads on the CPU and the GPU installs alike.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    build_char_tokenizer().save(str(out_dir / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "pad_token": PAD,
        "eos_token": EOS,
        "unk_token": UNK,
        "bos_token": None,
        "model_max_length": model_max_length,
        "clean_up_tokenization_spaces": False,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
