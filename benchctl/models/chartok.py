"""A byte-level tokenizer with no merges for the tiny test model: one token per character for ASCII text.

Built with `tokenizers` (no download, no training). Vocabulary [our choice]: three specials (`<pad>`=0,
`<eos>`=1, `<unk>`=2), then newline and the printable ASCII characters (space .. '~', ids 3..98, so "3+5=8" is
one token per character), then the remaining 160 byte values, so every UTF-8 text has an exact encoding.
No BOS token, nothing added around a prompt, no chat template (`Engine.render` falls back to
`task.prompt_text`).

Why byte-level rather than a plain character vocabulary: transformers 5 ignores `tokenizer_class` for
`model_type == "qwen2"` and rebuilds the pipeline of its own `Qwen2Tokenizer` (NFC, the Qwen split regex,
ByteLevel, BPE with unk=None) from the vocabulary in tokenizer.json; a plain character vocabulary then silently
drops every space and newline. This tokenizer *is* that pipeline with an empty merge list, so transformers 4
(which loads tokenizer.json as written), transformers 5 and vLLM all produce the same ids.
"""

from __future__ import annotations

import json
from pathlib import Path

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
SPECIALS = (PAD, EOS, UNK)
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))  # newline + printable ASCII: one token each
# transformers' Qwen2Tokenizer PRETOKENIZE_REGEX
QWEN2_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501 (transformers' regex, verbatim)


def _byte_symbols() -> list[str]:
    """The 256 ByteLevel symbols (GPT-2 bytes_to_unicode), ordered: CHARS' bytes first, then the rest."""
    from tokenizers import pre_tokenizers

    table = pre_tokenizers.ByteLevel.alphabet()  # the 256 symbols, unordered
    visible = [b for b in range(256) if chr(b) in table and (33 <= b <= 126 or 161 <= b <= 172 or b >= 174)]
    mapping = dict(zip(visible, (chr(b) for b in visible)))
    extra = iter(chr(256 + i) for i in range(256))
    for b in range(256):  # GPT-2 rule: bytes without a visible char map to U+0100.. in byte order
        if b not in mapping:
            mapping[b] = next(extra)
    first = [ord(c) for c in CHARS]
    return [mapping[b] for b in first] + [mapping[b] for b in range(256) if b not in first]


def char_vocab() -> dict[str, int]:
    """Token -> id: specials, then the byte symbols (newline and printable ASCII first)."""
    return {tok: i for i, tok in enumerate([*SPECIALS, *_byte_symbols()])}


def char_ids(text: str) -> list[int]:
    """Ids of ASCII `text` without loading a tokenizer (one id per character; used by the SFT data)."""
    index = {c: 3 + i for i, c in enumerate(CHARS)}
    return [index[c] for c in text]


def build_char_tokenizer():
    """A `tokenizers.Tokenizer`: Qwen2's pipeline over a byte vocabulary with no merges."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.BPE(vocab=char_vocab(), merges=[], unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True) for t in SPECIALS])
    return tok


def save_char_tokenizer(out_dir: Path, model_max_length: int) -> None:
    """Write `tokenizer.json` and `tokenizer_config.json` into `out_dir`.

    `tokenizer_class` is "Qwen2Tokenizer" [our choice]: the class transformers picks for qwen2 anyway (4.x
    resolves it to Qwen2TokenizerFast over tokenizer.json).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    build_char_tokenizer().save(str(out_dir / "tokenizer.json"))
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "pad_token": PAD,
        "eos_token": EOS,
        "unk_token": UNK,
        "bos_token": None,
        "model_max_length": model_max_length,
        "clean_up_tokenization_spaces": False,
        "add_prefix_space": False,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
