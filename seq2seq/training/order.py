"""The order training sees its examples in: token-bucketed batches, shuffled per epoch, one share per rank.

With several corpora of other weights than 1, each epoch first draws its examples (`Mixture.draw`),
then modifies some of them where the corpora ask for it (`Augmenter.epoch`), then batches them by
their own lengths.

The order is a function of the seed, the epoch and the number of processes, so every rank can work
out every other rank's share: a step's token count over all ranks is known without asking them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from seq2seq.batching import even_batches, token_batches
from seq2seq.config import TrainConfig
from seq2seq.data.augmented import Augmenter, Corpus, EpochVariants
from seq2seq.data.mixing import Mixture
from seq2seq.data.parallel import Batch
from seq2seq.training.distributed import DistInfo
from seq2seq.training.shapes import BatchShapes


class Position(Protocol):
    """Where in the order training stands (`seq2seq.training.state.Progress` is one)."""

    epoch: int
    next_batch: int


@dataclass(frozen=True)
class Step:
    """One optimizer step's work for this rank, and the real target tokens of the step on all ranks."""

    batches: list[np.ndarray]  # example indices, one array per accumulation step
    total_tokens: int
    variants: EpochVariants | None = None  # the epoch's modified pairs, which some indices name
    shapes: BatchShapes | None = None  # what the batches are padded to (None: their longest pair's length)

    def build(self, data: Corpus) -> list[Batch]:
        """The step's padded batches: of pairs of `data`, and of the epoch's modified pairs."""
        source = data if self.variants is None else self.variants
        batches = [source.batch(indices) for indices in self.batches]
        return batches if self.shapes is None else [self.shapes.fit(b) for b in batches]


class BatchOrder:
    """Each epoch's batches (example indices) for this rank, reproducible from the seed and epoch.

    `costs` (N,) are the padded lengths batching goes by, `targets` (N,) the real target tokens of
    each example (`ParallelData.target_tokens`); `augment` modifies some of each epoch's examples.
    """

    def __init__(
        self,
        costs: np.ndarray,
        targets: np.ndarray,
        cfg: TrainConfig,
        info: DistInfo,
        mixture: Mixture | None = None,
        augment: Augmenter | None = None,
    ) -> None:
        self.costs, self.targets, self.cfg, self.info = costs, targets, cfg, info
        self.mixture = mixture  # None or plain: each epoch is every example once
        self.augment = augment  # None: every example as prepared
        self.shapes = BatchShapes.of(cfg)
        self._cache: tuple[int, list[np.ndarray], np.ndarray, EpochVariants | None] | None = None

    def batches(self, epoch: int) -> list[np.ndarray]:
        """This rank's batches for `epoch`, in training order (the last epoch's are kept)."""
        return self._epoch(epoch)[0]

    def _epoch(self, epoch: int) -> tuple[list[np.ndarray], np.ndarray, EpochVariants | None]:
        """This rank's batches of `epoch`, the target tokens of each batch position over all ranks, and
        the epoch's modified pairs."""
        if self._cache is None or self._cache[0] != epoch:
            world = self.info.world
            examples = self.mixture.draw(self.cfg.seed, epoch) if self.mixture is not None else None
            costs, targets, variants = self.costs, self.targets, None
            if self.augment is not None:
                variants = self.augment.epoch(self.cfg.seed, epoch, examples, costs, targets)
                examples, costs, targets = variants.examples, variants.costs, variants.targets
            elif examples is not None:
                costs, targets = costs[examples], targets[examples]
            padded = self.shapes.costs(costs)
            batches = even_batches(token_batches(padded, self.cfg.max_tokens, self.cfg.seed, epoch), world)
            tokens = _tokens(batches, targets).reshape(-1, world).sum(1)  # batch i is rank i % world's
            if examples is not None:  # positions in the epoch -> examples
                batches = [examples[batch] for batch in batches]
            self._cache = (epoch, batches[self.info.rank :: world], tokens, variants)
        return self._cache[1], self._cache[2], self._cache[3]

    def next_step(self, at: Position) -> Step:
        """The batches of the next optimizer step (one per accumulation step); advances `at`."""
        batches, tokens, variants = self._epoch(at.epoch)
        end = at.next_batch + self.cfg.accum_steps
        step = Step(
            batches[at.next_batch : end], int(tokens[at.next_batch : end].sum()), variants, self.shapes
        )
        at.next_batch += len(step.batches)
        if at.next_batch >= len(batches):
            at.epoch, at.next_batch = at.epoch + 1, 0
        return step

    def describe(self) -> str:
        """What the order of an epoch's batches depends on, besides the data."""
        mixed = self.mixture.describe() if self.mixture is not None else ""
        augmented = self.augment.describe() if self.augment is not None else ""
        shaped = f"lengths in multiples of {self.shapes.multiple}" if self.shapes.multiple else ""
        return (
            f"seed {self.cfg.seed}, max_tokens {self.cfg.max_tokens}, {self.info.world} process(es)"
            + "".join(f", {part}" for part in (mixed, augmented, shaped) if part)
        )


def _tokens(batches: list[np.ndarray], targets: np.ndarray) -> np.ndarray:
    """(len(batches),) real target tokens of each batch of positions."""
    starts = np.cumsum([0, *map(len, batches[:-1])])
    return np.add.reduceat(targets[np.concatenate(batches)], starts)
