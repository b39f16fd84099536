"""Where and in which precision tensors live: device selection, autocast, gradient scaling."""

from __future__ import annotations

import contextlib
import platform
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


def cpu_has_bf16_kernels() -> bool:
    """Whether oneDNN has bf16 kernels for this CPU (AVX-512 or newer on x86): without them (an
    AVX2-only CPU such as AMD's Zen 3), bf16 products fall back to reference code, 31x slower than
    fp32 in a training step measured on a Zen 3."""
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return torch.backends.mkldnn.is_available() and check is not None and bool(check())


INT8_DOT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str] | None:
    """The CPU's feature flags (avx2, avx512_vnni, amx_int8, ...) from `cpuinfo`'s first `flags` line,
    or None where there is none to read (no /proc, not x86)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            line = next((line for line in f if line.startswith("flags")), None)
    except OSError:
        return None
    return frozenset(line.split(":", 1)[1].split()) if line is not None else None


def cpu_has_int8_dot_products(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether int8 products sum in int32 on this CPU: not on an x86 CPU without VNNI (AVX2 only, as
    AMD's Zen 3), where pairs of u8 x s8 products sum in int16 and full-range int8 weights overflow.
    True where it cannot tell (not x86, no `cpuinfo`)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return True
    flags = cpu_flags(cpuinfo)
    return flags is None or not INT8_DOT_FLAGS.isdisjoint(flags)


def faster_cpu_dtype(
    step: Callable[[torch.dtype | None], None],
    repeats: int = 2,
    margin: float = 0.05,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[torch.dtype | None, str]:
    """bf16 autocast where it is faster than fp32 on this CPU, else fp32; and the timings that say so.

    `step(dtype)` runs one representative unit of work in that precision. bf16 pays off on CPUs
    with AMX or fast AVX512-BF16 paths, and costs up to 2x elsewhere, so it is timed, not assumed:
    a warm-up, then `repeats` timed runs of each. bf16 must be faster by `margin` (timing noise).
    A CPU without bf16 kernels is not timed (`cpu_has_bf16_kernels`), and bf16's timing stops as
    soon as it has taken longer than fp32's runs in all: it can no longer win. `clock` reads seconds.
    """
    if not cpu_has_bf16_kernels():
        return None, "no bf16 kernels for this CPU (oneDNN needs AVX-512 or newer): fp32, not timed"
    seconds: dict[str, float] = {}
    for name, dtype in (("fp32", None), ("bf16", torch.bfloat16)):
        try:
            step(dtype)  # warm-up: oneDNN picks its kernels on first use
            start, runs = clock(), 0
            while runs < repeats:
                step(dtype)
                runs += 1
                if "fp32" in seconds and clock() - start > repeats * seconds["fp32"]:
                    break  # bf16 has already lost
            seconds[name] = (clock() - start) / runs
        except RuntimeError as e:  # no bf16 kernels for some op on this build
            return None, f"bf16 failed on this CPU ({e}); fp32"
    faster = seconds["bf16"] < (1 - margin) * seconds["fp32"]
    timings = f"fp32 {1000 * seconds['fp32']:.0f} ms, bf16 {1000 * seconds['bf16']:.0f} ms per probe step"
    return (torch.bfloat16 if faster else None), f"{timings}: {'bf16' if faster else 'fp32'}"
