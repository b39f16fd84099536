"""Label-smoothed cross-entropy over real (non-padding) target tokens."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from seq2seq.special import PAD


def sequence_loss(logits: Tensor, targets: Tensor, label_smoothing: float = 0.0) -> Tensor:
    """Summed label-smoothed cross-entropy of logits (B, T, V) against targets (B, T); PAD ignored.

    The caller divides by the number of real target tokens (summed over accumulated batches and
    processes), so every token weighs the same however the work is split.
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        targets.reshape(-1),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction="sum",
    )
