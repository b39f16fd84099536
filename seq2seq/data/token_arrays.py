"""Many sentences' token ids in one flat array plus offsets: a corpus of any size holds no Python
object per sentence (`seq2seq.data.parallel` pairs two of them; a prepared corpus memory-maps them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from seq2seq.special import PAD, UNK


@dataclass
class TokenArrays:
    """The token ids of many sentences in one flat array: sentence i is `ids[offsets[i]:offsets[i+1]]`."""

    ids: np.ndarray  # (total tokens,) uint16 or uint32, without bos/eos
    offsets: np.ndarray  # (N + 1,) int64, offsets[0] == 0, offsets[-1] == len(ids)

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]]) -> TokenArrays:
        lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
        offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ids = np.fromiter((i for seq in seqs for i in seq), dtype=np.uint32, count=int(offsets[-1]))
        return cls(ids, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        """(N,) tokens of each sentence."""
        return np.diff(self.offsets)

    def sequences(self, rows: Sequence[int] | np.ndarray) -> list[list[int]]:
        """The id lists of these sentences."""
        return [self.ids[self.offsets[i] : self.offsets[i + 1]].tolist() for i in rows]

    def unknown_share(self) -> float:
        """The share of `<unk>` pieces: text the vocabulary can neither read nor write."""
        return float(np.count_nonzero(self.ids == UNK)) / max(len(self.ids), 1)

    def padded(self, rows: np.ndarray, first: int | None, last: int | None, reverse: bool = False) -> Tensor:
        """(B, longest [+ 1] [+ 1]) ids of `rows`, with `first` before and `last` after each (when
        given), right-padded with PAD; gathered in one vectorized step. With `reverse`, each
        sentence's ids are laid out last first (`first` and `last` stay where they are)."""
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[rows]  # (B,)
        lengths = self.offsets[rows + 1] - starts  # (B,)
        shift = int(first is not None)
        width = int(lengths.max(initial=0)) + shift + int(last is not None)
        col = np.arange(width)[None, :] - shift  # (1, W) position within the sentence
        inside = (col >= 0) & (col < lengths[:, None])  # (B, W)
        read = lengths[:, None] - 1 - col if reverse else col  # (B, W) which id of the sentence
        out = np.full((len(rows), width), PAD, dtype=np.int64)
        out[inside] = self.ids[(starts[:, None] + read)[inside]]
        if first is not None:
            out[:, 0] = first
        if last is not None:
            out[np.arange(len(rows)), lengths + shift] = last
        return torch.from_numpy(out)
