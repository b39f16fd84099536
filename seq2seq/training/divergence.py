"""A run that has diverged stops, saving nothing: the loss or the weights are no longer finite numbers."""

from __future__ import annotations

import math

import torch

from seq2seq.config import TrainConfig
from seq2seq.errors import TrainingDiverged
from seq2seq.models.build import Model


def check_finite(
    loss: float, model: Model, step: int, cfg: TrainConfig, every_step_skipped: bool = False
) -> None:
    """Raise `TrainingDiverged` (saying what to change) unless `loss` and every weight are finite.

    `loss` is summed over every rank (and the weights are the same on every rank), so all ranks
    stop together. The trainer checks where the loss reaches the host anyway: at each log line and
    before each checkpoint, so a diverged state is never saved. With fp16, steps whose loss
    overflowed are skipped by the loss scaler and not in `loss`; `every_step_skipped` (none of the
    interval's steps counted) is a divergence too: the forward pass overflows, whatever the scale.
    """
    weights_ok = bool(torch.stack([w.isfinite().all() for w in model.parameters()]).all())
    if math.isfinite(loss) and weights_ok and not every_step_skipped:
        return
    if every_step_skipped:
        what = "every step's loss overflowed in fp16 (use train.precision bf16 or fp32)"
    elif not math.isfinite(loss):
        what = f"the training loss is {loss}"
    else:
        what = "the weights hold NaN or inf"
    raise TrainingDiverged(
        f"training diverged: {what} at step {step} (within the last {cfg.log_every} steps); "
        "nothing was saved after the last checkpoint. Lower train.lr "
        f"(now {cfg.lr:g}), raise train.warmup_steps or check the data, then continue from "
        "the last checkpoint with --resume or start over with --overwrite"
    )
