"""Work cut into batches: length-sorted groups under a token budget, shares per rank, padded ids.

What training, validation, batched decoding and the server's batcher all batch with; it knows ids and
costs only, never text or models.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

import numpy as np
import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from seq2seq.errors import DataError
from seq2seq.special import PAD


def token_batches(
    costs: Sequence[int] | np.ndarray,
    max_tokens: int,
    seed: int | None = None,
    epoch: int = 0,
    size_to: Callable[[int], int] | None = None,
) -> list[np.ndarray]:
    """Group example indices into batches of at most `max_tokens` padded tokens.

    Examples are sorted by cost so a batch holds similar lengths (little padding). With a seed, ties
    are broken randomly and the batch order is shuffled, reproducibly for each (seed, epoch). Every
    index appears in exactly one batch; an example costing more than `max_tokens` gets a batch alone;
    no batch is empty (no examples, no batches). With `size_to`, a batch that `n` examples would fit
    takes `size_to(n)` (1 to n) of them: decoding keeps its batches at a few sizes. Works on arrays
    (a sort and one small vectorized search per batch), never per example in Python.
    """
    costs = np.asarray(costs)
    if not len(costs):
        return []
    order = np.argsort(costs, kind="stable")
    order = order.astype(np.int32) if len(order) < 2**31 else order  # half the memory it keeps
    ordered = costs[order]
    rng = np.random.default_rng([seed, epoch]) if seed is not None else None
    if rng is not None:  # ties broken at random: shuffle each run of equal costs in place
        ties = np.flatnonzero(np.diff(ordered)) + 1
        for start, end in pairwise([0, *ties, len(order)]):
            rng.shuffle(order[start:end])
    bounds = [0]
    while bounds[-1] < len(order):
        start = bounds[-1]
        # ascending costs: a batch of k examples costs k x its last one, and holds at most this many
        window = ordered[start : start + max(max_tokens // int(ordered[start]), 1)]
        over = np.arange(1, len(window) + 1) * window > max_tokens
        size = max(int(over.argmax()) if over.any() else len(window), 1)
        bounds.append(start + (size_to(size) if size_to else size))
    batches = np.split(order, bounds[1:-1])
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def shard_batches(batches: list[np.ndarray], rank: int, world: int) -> list[np.ndarray]:
    """The batches rank `rank` of `world` processes trains on: disjoint, together covering all."""
    return even_batches(batches, world)[rank::world]


def even_batches(batches: list[np.ndarray], world: int) -> list[np.ndarray]:
    """`batches` in a number that `world` divides, batch i going to rank i % world (`shard_batches`).

    Every rank must take the same number of steps, so the largest batches are split in two until
    the count divides evenly; no example is dropped or repeated.
    """
    batches = list(batches)
    while len(batches) % world:
        largest = max(range(len(batches)), key=lambda j: len(batches[j]))
        if len(batches[largest]) < 2:
            raise DataError(f"too few training examples to give each of {world} processes a batch")
        big = batches[largest]
        batches[largest : largest + 1] = [big[: len(big) // 2], big[len(big) // 2 :]]
    return batches


def pad(seqs: Sequence[Sequence[int]]) -> Tensor:
    """(B, max_len) long tensor, right-padded with PAD; no sequences give a (0, 0) tensor."""
    if not seqs:
        return torch.empty(0, 0, dtype=torch.long)
    return pad_sequence(
        [torch.tensor(s, dtype=torch.long) for s in seqs], batch_first=True, padding_value=PAD
    )
