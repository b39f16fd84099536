"""The order training sees its examples in: token-bucketed batches, shuffled per epoch, one share per rank."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from seq2seq.batching import shard_batches, token_batches
from seq2seq.config import TrainConfig
from seq2seq.training.distributed import DistInfo


class Position(Protocol):
    """Where in the order training stands (`seq2seq.training.state.Progress` is one)."""

    epoch: int
    next_batch: int


class BatchOrder:
    """Each epoch's batches (example indices) for this rank, reproducible from the seed and epoch."""

    def __init__(self, costs: np.ndarray, cfg: TrainConfig, info: DistInfo) -> None:
        self.costs, self.cfg, self.info = costs, cfg, info
        self._cache: tuple[int, list[np.ndarray]] | None = None

    def batches(self, epoch: int) -> list[np.ndarray]:
        """This rank's batches for `epoch`, in training order (the last epoch's are kept)."""
        if self._cache is None or self._cache[0] != epoch:
            batches = token_batches(self.costs, self.cfg.max_tokens, self.cfg.seed, epoch)
            self._cache = (epoch, shard_batches(batches, self.info.rank, self.info.world))
        return self._cache[1]

    def next_group(self, at: Position) -> list[np.ndarray]:
        """The batches of the next optimizer step (one per accumulation step); advances `at`."""
        batches = self.batches(at.epoch)
        group = batches[at.next_batch : at.next_batch + self.cfg.accum_steps]
        at.next_batch += len(group)
        if at.next_batch >= len(batches):
            at.epoch, at.next_batch = at.epoch + 1, 0
        return group

    def describe(self) -> str:
        """What the order of an epoch's batches depends on, besides the data."""
        return f"seed {self.cfg.seed}, max_tokens {self.cfg.max_tokens}, {self.info.world} process(es)"
