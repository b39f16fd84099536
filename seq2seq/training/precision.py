"""`precision: auto` on a CPU: bf16 autocast where the CPU's features say it is faster
(`seq2seq.device.auto_cpu_dtype`), chosen once at the start of the run and kept.

(On a GPU `auto` needs no record: `seq2seq.device.autocast_dtype` decides from what the GPU supports.)
"""

from __future__ import annotations

import logging

import torch

from seq2seq.device import auto_cpu_dtype
from seq2seq.training.distributed import DistInfo, broadcast_from_main
from seq2seq.training.state import Progress

# the trainer's logger: this line was always the trainer's, and train.log names the logger
log = logging.getLogger("seq2seq.training.trainer")


def choose_cpu_precision(progress: Progress, info: DistInfo) -> torch.dtype | None:
    """The autocast dtype of the run: bf16 where `auto_cpu_dtype` says so, else None (fp32).

    Rank 0 decides and every rank follows it; the choice is kept in `progress.precision`, so a
    resumed run keeps the one it started with (on another machine too).
    """
    if not progress.precision:
        bf16 = 0.0
        if info.is_main:
            dtype, reason = auto_cpu_dtype()
            log.info("precision auto on this CPU: %s", reason)
            bf16 = float(dtype is torch.bfloat16)
        progress.precision = "bf16" if broadcast_from_main(bf16, info, patient=True) else "fp32"
    return torch.bfloat16 if progress.precision == "bf16" else None
