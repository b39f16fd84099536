"""Where and how a model runs: device, precision and quantization, as one value for every engine."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """The command line's --device, --precision and --quantize."""

    device: str = "auto"  # auto (a GPU when there is one), cpu, cuda or cuda:N
    precision: str = "auto"  # auto (bf16 on GPUs, by its features on a CPU), fp32, bf16 or fp16
    quantize: str | None = None  # int8 (s2s, CPU only), or a CTranslate2 compute type


AUTO = Placement()  # the best device there is, at the precision it runs best
