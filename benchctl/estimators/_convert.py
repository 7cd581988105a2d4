"""numpy / torch in, same kind out.  torch is never imported here unless the caller passed a tensor.

[our choice] floating inputs keep their dtype; integer/bool inputs give float64 (numpy) or torch's default
float dtype (torch), since an integer advantage would be meaningless.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from benchctl.errors import BenchctlError


def is_torch(x: Any) -> bool:
    """True for a torch.Tensor, without importing torch when the caller never did."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def to_float64(x: Any, what: str) -> tuple[np.ndarray, Callable[[np.ndarray], Any]]:
    """x as a float64 numpy array plus a function that turns a float64 result back into x's kind.

    The array may share memory with `x` (numpy float64 input): callers must not write into it.
    """
    if is_torch(x):
        import torch

        out_dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
        arr = x.detach().to(device="cpu", dtype=torch.float64).numpy()
        device = x.device

        def back_torch(a: np.ndarray):
            return torch.from_numpy(np.ascontiguousarray(a)).to(device=device, dtype=out_dtype)

        return arr, back_torch
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise BenchctlError(f"{what} must be a numeric array: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise BenchctlError(f"{what} must be numeric (got dtype {arr.dtype})")
    out_dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
    if out_dtype == np.float64:
        return np.asarray(arr, dtype=np.float64), _identity
    return arr.astype(np.float64), lambda a: a.astype(out_dtype)


def _identity(a: np.ndarray) -> np.ndarray:
    return a


def to_bool(x: Any, what: str) -> np.ndarray:
    """A mask (numpy or torch, bool or 0/1) as a numpy bool array."""
    if is_torch(x):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype != np.bool_:
        if arr.dtype.kind not in "biuf" or not np.isin(arr, (0, 1)).all():
            raise BenchctlError(f"{what} must be boolean or 0/1")
        arr = arr.astype(bool)
    return arr


def check_inputs(inputs: dict, shape: tuple[int, int]) -> dict:
    """The optional per-call inputs of `Estimator.advantages` (contract.md §1) checked against rewards (P, G):
    prompt_ids (P,) -> a tuple of str (None when not given), seq_logprob (P, G) -> float64 (None when not given)."""
    from benchctl.estimators.registry import INPUTS

    if unknown := [k for k in inputs if k not in INPUTS]:
        raise BenchctlError(f"unknown estimator input {unknown[0]!r}; valid: {', '.join(INPUTS)}")
    ids, logprob = inputs.get("prompt_ids"), inputs.get("seq_logprob")
    if ids is not None:
        ids = tuple(str(x) for x in (ids.tolist() if hasattr(ids, "tolist") else ids))
        if len(ids) != shape[0]:
            raise BenchctlError(f"prompt_ids must have one id per group ({shape[0]}); got {len(ids)}")
    if logprob is not None:
        logprob, _ = to_float64(logprob, "seq_logprob")
        if logprob.shape != shape or not np.isfinite(logprob).all():
            raise BenchctlError(f"seq_logprob must be finite with the rewards' shape {shape}; got {logprob.shape}")
    return {"prompt_ids": ids, "seq_logprob": logprob}
