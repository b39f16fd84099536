"""Where and in which precision tensors live: device selection, autocast, gradient scaling."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from seq2seq.cpu import CpuFeatures, read_cpu_features
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
    here: a command running on the CPU asks `auto_cpu_dtype`, and a resumed one keeps its first choice.
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


@dataclass(frozen=True)
class Bf16Measured:
    """bf16 autocast against fp32 on one kind of CPU (2 cores, torch 2.13; README, Benchmarks): a CPU
    with all of `flags` (from `vendor`, when one is named) runs `precision: auto` in bf16 if `bf16`."""

    flags: frozenset[str]
    vendor: str  # "" = any
    bf16: bool
    measured: str  # the machine, the dates, and bf16's speed over fp32's


# What `precision: auto` rests on, first match wins. A CPU matching no row runs fp32: bf16 ran 0.03x
# fp32's speed in training on an AVX2-only AMD EPYC Zen 3 (2026-12-02), where oneDNN emulates it; an
# AVX-512 CPU without AVX512-BF16 converts every product too, and no other kind was measured.
BF16_MEASURED = (
    Bf16Measured(
        frozenset({"amx_bf16"}),
        "",
        True,
        "an Intel Xeon with AMX, 2026-12-02/03: training 1.09x, beam-5 decoding 1.36-1.66x",
    ),
    Bf16Measured(
        frozenset({"avx512_bf16"}),
        "AuthenticAMD",
        True,
        "an AMD EPYC Zen 4 (AVX512-BF16, no AMX), 2026-11-30 and 2026-12-03: training 1.11x, beam-5 "
        "decoding 1.36-1.64x",
    ),
    Bf16Measured(
        frozenset({"avx512_bf16"}),
        "GenuineIntel",
        False,
        "an Intel Xeon with AVX512-BF16 and no AMX, 2026-11-30: training 0.57x",
    ),
)


def bf16_choice(cpu: CpuFeatures, bf16_kernels: bool) -> tuple[torch.dtype | None, str]:
    """`precision: auto` on a CPU with these features: bf16 where `BF16_MEASURED` found bf16 faster on
    such a CPU and oneDNN has bf16 kernels (`bf16_kernels`), else None (fp32); and why.

    A function of the CPU alone, never of a timing: a timed probe picked bf16 in one run and fp32 in
    the next when the machine was busy, and the two runs differed.
    """
    row = next((r for r in BF16_MEASURED if r.flags <= cpu.flags and r.vendor in ("", cpu.vendor)), None)
    if row is None:
        return None, "fp32: bf16 was measured faster only on CPUs with AMX, or AMD's with AVX512-BF16"
    if not row.bf16:
        return None, f"fp32: bf16 was slower on {row.measured}"
    if not bf16_kernels:
        return None, "fp32: this torch has no oneDNN bf16 kernels for this CPU"
    return torch.bfloat16, f"bf16: measured faster on {row.measured}"


def auto_cpu_dtype() -> tuple[torch.dtype | None, str]:
    """`precision: auto` on this CPU, for training and decoding alike (`bf16_choice` of its features)."""
    return bf16_choice(read_cpu_features(), cpu_has_bf16_kernels())
