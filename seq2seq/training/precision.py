"""`precision: auto` on a CPU: bf16 autocast only where a timed probe of the run's model says it is faster.

(On a GPU `auto` needs no probe: `seq2seq.device.autocast_dtype` decides from what the GPU supports.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import torch

from seq2seq.data.parallel import JoinedCorpus, ParallelData
from seq2seq.device import autocast, faster_cpu_dtype
from seq2seq.training.distributed import DistInfo, broadcast_from_main
from seq2seq.training.loss import TrainingLoss
from seq2seq.training.state import Progress

# the trainer's logger: this line was always the trainer's, and train.log names the logger
log = logging.getLogger("seq2seq.training.trainer")


def choose_cpu_precision(
    progress: Progress, step: Callable[[torch.dtype | None], None], info: DistInfo
) -> torch.dtype | None:
    """The autocast dtype of the run: bf16 if timing `step` (`probe_step`) says so, else None (fp32).

    Rank 0 measures and every rank follows it; the choice is kept in `progress.precision`, so a
    resumed run keeps the one it started with.
    """
    if not progress.precision:
        bf16 = 0.0
        if info.is_main:
            dtype, reason = faster_cpu_dtype(step)
            log.info("precision auto on this CPU: %s", reason)
            bf16 = float(dtype is torch.bfloat16)
        progress.precision = "bf16" if broadcast_from_main(bf16, info, patient=True) else "fp32"
    return torch.bfloat16 if progress.precision == "bf16" else None


def probe_step(
    objective: TrainingLoss,
    data: ParallelData | JoinedCorpus,
    max_tokens: int,
    device: torch.device,
    dtype: torch.dtype | None,
) -> None:
    """One forward and backward pass of the model in `objective` on a batch of the run's batch size.

    The batch is the first training examples (in the layout of the run's task), as many as 32-token
    examples would fill `max_tokens` (at most 2048). Leaves no trace: the RNG (dropout, data order) is
    restored and the gradients are dropped. The bare objective, not its DDP wrapper: rank 0 runs alone.
    """
    rows = max(min(max_tokens, 2048) // 32, 1)
    batch = data.batch(np.arange(min(rows, len(data)))).to(device)
    with torch.random.fork_rng(devices=[]), autocast(device, dtype):
        objective(batch.src, batch.tgt_in, batch.tgt_out).backward()
    objective.zero_grad(set_to_none=True)
