"""The batch sizes a search holds the model's tensors at: a ladder of a few sizes per doubling.

A search drops the sentences that finish, so its batch shrinks; the memory and the cache keep the
rows at a rung of the ladder instead (`held_rows`), padded with copies of the last row that are
decoded and ignored, and batched decoding starts each batch at a rung too (`held_size_within`).

Why: oneDNN builds and keeps a kernel for every product shape it runs, and the allocator keeps
blocks of every size it has handed out, so a batch that shrinks one sentence at a time costs
memory for each size it passes through (bf16 beam search on a CPU above all).
"""

from __future__ import annotations

import torch
from torch import Tensor

RUNGS_PER_OCTAVE = 4  # batch sizes the model's tensors are held at between two powers of two (0: exact)


def held_rows(live: int) -> int:
    """The sentences the model's tensors hold while `live` are being searched: `live` rounded up to
    a rung of 1, 2, ..., 8, 10, 12, 14, 16, 20, 24, ... (`RUNGS_PER_OCTAVE` per doubling), at most
    a quarter more. The rows past the live ones are copies of the last, decoded and ignored."""
    step = _rung_spacing(live)
    return -(-live // step) * step


def held_size_within(count: int) -> int:
    """The largest batch size of `held_rows`' ladder up to `count` (at least 1): how many sentences a
    batch that `count` would fit takes, so that it starts at a held size too."""
    count = max(count, 1)
    step = _rung_spacing(count)
    return count // step * step


def _rung_spacing(n: int) -> int:
    """The spacing of `held_rows`' ladder around n: 1 up to 8 (and with `RUNGS_PER_OCTAVE` 0), else
    the power of two at or below n over `RUNGS_PER_OCTAVE`."""
    if RUNGS_PER_OCTAVE == 0 or n <= 8:
        return 1
    return max((1 << (n.bit_length() - 1)) // RUNGS_PER_OCTAVE, 1)


def pad_rows(x: Tensor, held: int) -> Tensor:
    """x (N, ...) with copies of its last row appended up to `held` rows (an index, or a step's input)."""
    extra = held - x.size(0)
    return x if extra <= 0 else torch.cat([x, x[-1:].expand(extra, *x.shape[1:])])


def held_after_drop(keep: Tensor, held: int) -> tuple[int, Tensor]:
    """After sentences leave: the rows held now (`held_rows` of the `keep` (N,) kept, never more than
    `held` before) and `keep` padded to them, the index that selects the memory's and cache's rows."""
    held = min(held_rows(keep.numel()), held)
    return held, pad_rows(keep, held)
