"""Where and how a model runs: device, precision, quantization and CPU threads, as one value for every
engine."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """The command line's --device, --precision, --quantize and (`s2s serve`) --threads."""

    device: str = "auto"  # auto (a GPU when there is one), cpu, cuda or cuda:N
    precision: str = "auto"  # auto (bf16 on GPUs, by its features on a CPU), fp32, bf16 or fp16
    quantize: str | None = None  # int8 (s2s, CPU only), or a CTranslate2 compute type
    # CPU threads: torch's for s2s's decoder; CTranslate2's batches decoded at once. 0: one per core
    threads: int = 0


AUTO = Placement()  # the best device there is, at the precision it runs best
