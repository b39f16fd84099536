"""The order training sees its examples in: token-bucketed batches, shuffled per epoch, one share per rank.

With several corpora of other weights than 1, each epoch first draws its examples (`Mixture.draw`),
then batches the draw.

The order is a function of the seed, the epoch and the number of processes, so every rank can work
out every other rank's share: a step's token count over all ranks is known without asking them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from seq2seq.batching import even_batches, token_batches
from seq2seq.config import TrainConfig
from seq2seq.data.mixing import Mixture
from seq2seq.training.distributed import DistInfo


class Position(Protocol):
    """Where in the order training stands (`seq2seq.training.state.Progress` is one)."""

    epoch: int
    next_batch: int


@dataclass(frozen=True)
class Step:
    """One optimizer step's work for this rank, and the real target tokens of the step on all ranks."""

    batches: list[np.ndarray]  # example indices, one array per accumulation step
    total_tokens: int


class BatchOrder:
    """Each epoch's batches (example indices) for this rank, reproducible from the seed and epoch.

    `costs` (N,) are the padded lengths batching goes by, `targets` (N,) the real target tokens of
    each example (`ParallelData.target_tokens`).
    """

    def __init__(
        self,
        costs: np.ndarray,
        targets: np.ndarray,
        cfg: TrainConfig,
        info: DistInfo,
        mixture: Mixture | None = None,
    ) -> None:
        self.costs, self.targets, self.cfg, self.info = costs, targets, cfg, info
        self.mixture = mixture  # None or plain: each epoch is every example once
        self._cache: tuple[int, list[np.ndarray], np.ndarray] | None = None

    def batches(self, epoch: int) -> list[np.ndarray]:
        """This rank's batches for `epoch`, in training order (the last epoch's are kept)."""
        return self._epoch(epoch)[0]

    def _epoch(self, epoch: int) -> tuple[list[np.ndarray], np.ndarray]:
        """This rank's batches of `epoch`, and the target tokens of each batch position over all ranks."""
        if self._cache is None or self._cache[0] != epoch:
            world = self.info.world
            drawn = self.mixture.draw(self.cfg.seed, epoch) if self.mixture is not None else None
            costs = self.costs if drawn is None else self.costs[drawn]
            batches = token_batches(costs, self.cfg.max_tokens, self.cfg.seed, epoch)
            if drawn is not None:  # positions in the draw -> examples
                batches = [drawn[batch] for batch in batches]
            batches = even_batches(batches, world)
            tokens = (
                self._tokens(batches).reshape(-1, world).sum(1)
            )  # (batches per rank,): batch i is rank i % world's
            self._cache = (epoch, batches[self.info.rank :: world], tokens)
        return self._cache[1], self._cache[2]

    def _tokens(self, batches: list[np.ndarray]) -> np.ndarray:
        """(len(batches),) real target tokens of each batch."""
        starts = np.cumsum([0, *map(len, batches[:-1])])
        return np.add.reduceat(self.targets[np.concatenate(batches)], starts)

    def next_step(self, at: Position) -> Step:
        """The batches of the next optimizer step (one per accumulation step); advances `at`."""
        batches, tokens = self._epoch(at.epoch)
        end = at.next_batch + self.cfg.accum_steps
        step = Step(batches[at.next_batch : end], int(tokens[at.next_batch : end].sum()))
        at.next_batch += len(step.batches)
        if at.next_batch >= len(batches):
            at.epoch, at.next_batch = at.epoch + 1, 0
        return step

    def describe(self) -> str:
        """What the order of an epoch's batches depends on, besides the data."""
        mixed = self.mixture.describe() if self.mixture is not None else ""
        return f"seed {self.cfg.seed}, max_tokens {self.cfg.max_tokens}, {self.info.world} process(es)" + (
            f", {mixed}" if mixed else ""
        )
