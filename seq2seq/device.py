"""Where and in which precision tensors live: device selection, autocast, gradient scaling."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

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
    return device


DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}  # by precision; None = plain fp32


def autocast_dtype(device: torch.device, precision: str) -> torch.dtype | None:
    """The autocast dtype for `precision` on `device`; None means plain fp32.

    `auto` is bf16 on GPUs that support it, fp16 (with a grad scaler) on older GPUs, fp32 on the CPU
    (training measures the CPU instead: `faster_cpu_dtype`).
    """
    if precision not in ("auto", "fp32", "bf16", "fp16"):
        raise Seq2SeqError(f"precision {precision!r} is not one of auto, fp32, bf16, fp16")
    if precision == "auto":
        if device.type != "cuda":
            return None
        return torch.bfloat16 if has_native_bf16(device) else torch.float16
    if precision == "fp16" and device.type != "cuda":
        raise Seq2SeqError("precision fp16 needs a CUDA GPU; use bf16 or fp32 on the CPU")
    return DTYPES[precision]


def has_native_bf16(device: torch.device) -> bool:
    """Whether the GPU computes in bf16 itself (Ampere, compute capability 8.0, and later).

    Not `torch.cuda.is_bf16_supported()`: that also counts bf16 emulated on older GPUs (V100, T4),
    slower than fp16 with a loss scaler there.
    """
    return torch.cuda.get_device_capability(device) >= (8, 0)


def prefer_safe_attention_kernels() -> None:
    """Keep training's masked attention off the cuDNN backend of `scaled_dot_product_attention`.

    Its backward pass with an explicit mask (the encoder's padding, cross-attention) has given NaN
    gradients on Hopper GPUs; the flash, memory-efficient and math kernels remain. Process-wide,
    for the training process (inference does no backward pass).
    """
    torch.backends.cuda.enable_cudnn_sdp(False)


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


def faster_cpu_dtype(
    step: Callable[[torch.dtype | None], None], repeats: int = 2, margin: float = 0.05
) -> tuple[torch.dtype | None, str]:
    """bf16 autocast where it is faster than fp32 on this CPU, else fp32; and the timings that say so.

    `step(dtype)` runs one representative unit of work in that precision. bf16 pays off on CPUs
    with AMX or fast AVX512-BF16 paths, and costs up to 2x elsewhere, so it is timed, not assumed:
    a warm-up, then `repeats` timed runs of each. bf16 must be faster by `margin` (timing noise).
    """
    seconds: dict[str, float] = {}
    for name, dtype in (("fp32", None), ("bf16", torch.bfloat16)):
        try:
            step(dtype)  # warm-up: oneDNN picks its kernels on first use
            start = time.perf_counter()
            for _ in range(repeats):
                step(dtype)
            seconds[name] = (time.perf_counter() - start) / repeats
        except RuntimeError as e:  # no bf16 kernels for some op on this build
            return None, f"bf16 failed on this CPU ({e}); fp32"
    faster = seconds["bf16"] < (1 - margin) * seconds["fp32"]
    timings = f"fp32 {1000 * seconds['fp32']:.0f} ms, bf16 {1000 * seconds['bf16']:.0f} ms per probe step"
    return (torch.bfloat16 if faster else None), f"{timings}: {'bf16' if faster else 'fp32'}"
