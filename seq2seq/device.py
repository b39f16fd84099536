"""Where and in which precision tensors live: device selection, autocast, gradient scaling."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from seq2seq.errors import Seq2SeqError


def resolve_device(name: str) -> torch.device:
    """`auto` picks CUDA when a GPU is visible, else the CPU; asking for an absent GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not (name in ("cpu", "cuda") or (name.startswith("cuda:") and name[5:].isdigit())):
        raise Seq2SeqError(f"device {name!r} is not one of auto, cpu, cuda, cuda:N")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise Seq2SeqError(f"device {name!r} requested but no CUDA GPU is available; use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise Seq2SeqError(
                f"device {name!r} requested but only {torch.cuda.device_count()} GPU(s) are visible"
            )
    if device.type == "cuda":
        # fp32 matmuls on tensor cores (TF32) where precision is fp32
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device


def autocast_dtype(device: torch.device, precision: str) -> torch.dtype | None:
    """The autocast dtype for `precision` on `device`; None means plain fp32.

    `auto` is bf16 on GPUs that support it, fp16 (with a grad scaler) on older GPUs, fp32 on the CPU.
    """
    if precision not in ("auto", "fp32", "bf16", "fp16"):
        raise Seq2SeqError(f"precision {precision!r} is not one of auto, fp32, bf16, fp16")
    if precision == "auto":
        if device.type != "cuda":
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if precision == "fp16" and device.type != "cuda":
        raise Seq2SeqError("precision fp16 needs a CUDA GPU; use bf16 or fp32 on the CPU")
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


@contextlib.contextmanager
def autocast(device: torch.device, dtype: torch.dtype | None) -> Iterator[None]:
    if dtype is None:
        yield
    else:
        with torch.autocast(device_type=device.type, dtype=dtype):
            yield


def grad_scaler(device: torch.device, dtype: torch.dtype | None) -> torch.amp.GradScaler:
    """Loss scaling for fp16; a pass-through otherwise."""
    return torch.amp.GradScaler(device.type, enabled=dtype is torch.float16)
