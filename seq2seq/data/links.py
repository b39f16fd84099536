"""Reference alignment links of a corpus's pairs, over pieces, and a batch's links (guided alignment).

A link `(t, s)` says that target piece `t` (the row of `tgt_out` that predicts it, counted from 0) is
aligned to source position `s` (a column of the batch's `src`: control tokens first, then the
pieces). `seq2seq.data.alignments` makes them from word alignments when a corpus is prepared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass
class Links:
    """The links of N pairs in one flat array: pair i's are `pairs[offsets[i]:offsets[i + 1]]`."""

    pairs: np.ndarray  # (K, 2) int16 or int32: (target piece, source position)
    offsets: np.ndarray  # (N + 1,) int64, offsets[0] == 0, offsets[-1] == K

    @classmethod
    def from_lists(cls, links: Sequence[Sequence[tuple[int, int]]]) -> Links:
        """Links of pairs given as one list of (target piece, source position) per pair."""
        offsets = np.zeros(len(links) + 1, dtype=np.int64)
        np.cumsum([len(pair) for pair in links], out=offsets[1:])
        flat = np.array([link for pair in links for link in pair], dtype=np.int32).reshape(-1, 2)
        return cls(flat, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def batch(self, rows: Sequence[int] | np.ndarray) -> Tensor:
        """(L, 3) int64 `(row, target piece, source position)` of every link of the pairs `rows`, the
        batch's rows in the order given."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, counts = self.offsets[rows], self.offsets[rows + 1] - self.offsets[rows]  # (B,), (B,)
        total = int(counts.sum())
        first = np.repeat(starts - np.cumsum(counts) + counts, counts)  # (L,) each link's pair's start
        picked = self.pairs[first + np.arange(total)].astype(np.int64).reshape(-1, 2)  # (L, 2)
        owner = np.repeat(np.arange(len(rows), dtype=np.int64), counts)  # (L,)
        return torch.from_numpy(np.column_stack([owner, picked]))


def reference_attention(links: Tensor, shape: tuple[int, int, int]) -> Tensor:
    """(B, T, S) float32 on `links`' device: each target row spread evenly over the source positions
    it is linked to; a row without a link is all zero (it takes no part in the cost)."""
    target = torch.zeros(shape, dtype=torch.float32, device=links.device)
    target[links[:, 0], links[:, 1], links[:, 2]] = 1.0
    return target / target.sum(-1, keepdim=True).clamp_min(1.0)
