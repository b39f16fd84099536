"""How many pairs each epoch draws from each corpus: size x weight, with a temperature across groups.

Within a group (a translation direction; a bilingual run has one), a corpus of N pairs and weight w
gives round(N x w) pairs to an epoch: every pair floor(w) times, and a fresh random share of them for
the rest (0.3: a 30% sample, another one each epoch; 2.5: every pair twice and half of them a third
time). Across groups, temperature sampling (Arivazhagan et al. 2019): group g's share of the epoch is
proportional to (its size x weight)^(1/T), so T=1 keeps the proportions and T=5 flattens them;
the epoch's length stays the sum of size x weight. The draw is a function of the seed and the epoch,
so every rank works out the same one, and a resumed run the one it was in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seq2seq.config.bounds import MAX_EPOCH_PAIRS
from seq2seq.errors import DataError


@dataclass(frozen=True)
class Mixture:
    """The corpora an epoch draws from: sizes (pairs), weights, and the group of each."""

    sizes: tuple[int, ...]
    weights: tuple[float, ...]
    groups: tuple[int, ...] = ()  # a group index per corpus; () = one group
    temperature: float = 1.0
    names: tuple[str, ...] = ()

    @property
    def plain(self) -> bool:
        """Whether an epoch is every pair exactly once (no draw at all: the order runs need not change)."""
        return all(w == 1 for w in self.weights) and (self.temperature == 1 or len(set(self.groups)) <= 1)

    def counts(self) -> np.ndarray:
        """(K,) int64: pairs of each corpus in an epoch."""
        sizes, weights = np.asarray(self.sizes, np.float64), np.asarray(self.weights, np.float64)
        mass = sizes * weights
        groups = np.asarray(self.groups or (0,) * len(self.sizes))
        group_mass = np.bincount(groups, mass)
        share = np.where(group_mass > 0, group_mass / max(group_mass.sum(), 1), 0) ** (1 / self.temperature)
        target = share / max(share.sum(), 1e-300) * mass.sum()  # (G,) pairs of each group per epoch
        within = np.divide(mass, group_mass[groups], out=np.zeros_like(mass), where=group_mass[groups] > 0)
        return np.rint(within * target[groups]).astype(np.int64)

    def check(self) -> None:
        """Refuse (`DataError`) an epoch too large to draw, or one that draws no pair of a corpus
        that has some: what the weights (and the temperature) imply, once the sizes are known."""
        names = self.names or tuple(map(str, range(len(self.sizes))))
        pairs = float(np.dot(np.asarray(self.sizes, np.float64), np.asarray(self.weights, np.float64)))
        if pairs > MAX_EPOCH_PAIRS:
            raise DataError(
                f"an epoch would draw {pairs:,.0f} pairs (each corpus's pairs x its weight); at most "
                f"{MAX_EPOCH_PAIRS:,}: lower data.corpora weights"
            )
        counts = self.counts()
        empty = [n for n, size, count in zip(names, self.sizes, counts, strict=True) if size and not count]
        if empty:
            raise DataError(
                f"data.corpora {', '.join(empty)}: the weights and data.temperature draw no pair of it an "
                "epoch; raise its weight"
            )

    def draw(self, seed: int, epoch: int) -> np.ndarray | None:
        """(M,) int64: the pairs (numbered corpus after corpus) of `epoch`, or None when `plain`."""
        if self.plain:
            return None
        rng = np.random.default_rng([seed, epoch, 0x6D6978])  # its own stream: not the batch shuffle's
        drawn, start = [], 0
        for size, count in zip(self.sizes, self.counts(), strict=True):
            whole, rest = divmod(int(count), size) if size else (0, 0)
            drawn += [np.arange(start, start + size)] * whole
            if rest:
                drawn.append(start + np.sort(rng.choice(size, rest, replace=False)))
            start += size
        return np.concatenate(drawn) if drawn else np.zeros(0, np.int64)

    def describe(self) -> str:
        """What the draw depends on besides the seed and the epoch ("" when `plain`)."""
        if self.plain:
            return ""
        weights = ", ".join(
            f"{n} {w:g}"
            for n, w in zip(self.names or map(str, range(len(self.sizes))), self.weights, strict=True)
        )
        return f"weights {weights}" + (f", temperature {self.temperature:g}" if self.temperature != 1 else "")


def mixture_of(names: Sequence[str], sizes: Sequence[int], weights: Sequence[float]) -> Mixture:
    """The bilingual mixture: one group, temperature 1."""
    return Mixture(tuple(map(int, sizes)), tuple(map(float, weights)), names=tuple(names))
