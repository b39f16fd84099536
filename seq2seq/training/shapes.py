"""Training batches at a few fixed shapes (train.shape_multiple), and how the training step is compiled.

Token bucketing gives every batch its own (rows, source length, target length), so a compiler that
specializes on shapes, and a CUDA graph, which replays one recorded shape, would start over at almost
every step. With `shape_multiple` N, a batch's length is its longest pair's rounded up to a multiple
of N, both sides padded to it, and its rows are `max_tokens // length`: batching by rounded lengths
fills the rows already, and the few batches that come up short (the last of each length, a batch
split for another process) get filler rows, copies of their first row whose targets are all padding,
so they add nothing to the loss or the gradients. An epoch's batches then take at most
`max_len / N` shapes, each compiled (and on a GPU recorded as a CUDA graph) once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor, nn

from seq2seq.config import TrainConfig
from seq2seq.data.parallel import Batch
from seq2seq.special import PAD


@dataclass(frozen=True)
class BatchShapes:
    """Where batches are padded to: `multiple` 0 leaves each as long as its longest pair."""

    multiple: int
    max_tokens: int

    @classmethod
    def of(cls, cfg: TrainConfig) -> BatchShapes:
        return cls(cfg.shape_multiple, cfg.max_tokens)

    def costs(self, costs: np.ndarray) -> np.ndarray:
        """The padded length of each example as batching counts it: its own, or rounded up."""
        if not self.multiple:
            return costs
        return -(-costs // self.multiple) * self.multiple

    def shape(self, rows: int, width: int) -> tuple[int, int]:
        """(rows, length) a batch of `rows` rows whose longest side is `width` columns is padded to."""
        if not self.multiple:
            return rows, width
        length = -(-width // self.multiple) * self.multiple
        return max(rows, self.max_tokens // length, 1), length

    def fit(self, batch: Batch) -> Batch:
        """`batch` padded to its shape: columns of PAD on the right, filler rows below."""
        if not self.multiple:
            return batch
        width = max(batch.src.shape[1], batch.tgt_in.shape[1])
        rows, length = self.shape(batch.src.shape[0], width)
        return replace(
            batch,
            src=_padded(batch.src, rows, length, batch.src[:1]),
            tgt_in=_padded(batch.tgt_in, rows, length, batch.tgt_in[:1]),
            tgt_out=_padded(batch.tgt_out, rows, length, torch.full_like(batch.tgt_out[:1], PAD)),
        )


def _padded(ids: Tensor, rows: int, length: int, filler: Tensor) -> Tensor:
    """(rows, length): `ids` (B, W) with PAD columns after it and copies of `filler` (1, W) below it."""
    out = torch.full((rows, length), PAD, dtype=ids.dtype)
    out[: len(ids), : ids.shape[1]] = ids
    out[len(ids) :, : ids.shape[1]] = filler
    return out


def compiled(net: nn.Module, cfg: TrainConfig, device: torch.device, parallel: bool) -> nn.Module:
    """The training step's module as train.compile and train.shape_multiple ask.

    Without fixed shapes one graph serves every shape (`dynamic=True`). With them each shape gets its
    own specialized graph, and on a GPU in one process also a CUDA graph (`reduce-overhead`), which
    replays a whole step's kernels with one launch; DistributedDataParallel's hooks keep it out of
    CUDA graphs, so several processes compile without them.
    """
    if not cfg.compile:
        return net
    if not cfg.shape_multiple:
        return torch.compile(net, dynamic=True)  # type: ignore[return-value]
    graphs = device.type == "cuda" and not parallel
    return torch.compile(net, dynamic=False, mode="reduce-overhead" if graphs else None)  # type: ignore[return-value]


def uses_cuda_graphs(cfg: TrainConfig, device: torch.device, parallel: bool) -> bool:
    """Whether `compiled` records CUDA graphs (each step must then be marked as a new one)."""
    return cfg.compile and bool(cfg.shape_multiple) and device.type == "cuda" and not parallel
