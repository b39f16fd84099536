"""Each epoch draws size x weight pairs of each corpus, reproducibly, and batches them like one corpus:
exact resume and disjoint shares per rank hold with several corpora as with one."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from seq2seq.config import TrainConfig
from seq2seq.config.bounds import MAX_EPOCH_PAIRS
from seq2seq.data.mixing import Mixture, mixture_of
from seq2seq.errors import DataError
from seq2seq.training.distributed import DistInfo
from seq2seq.training.order import BatchOrder
from seq2seq.training.state import Progress

SIZES, WEIGHTS = (1000, 10_000, 300), (1.0, 0.3, 4.0)


def corpus_of(drawn: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.cumsum(SIZES), drawn, side="right")


def test_an_epoch_draws_size_times_weight_of_each_corpus():
    mixture = mixture_of("abc", SIZES, WEIGHTS)
    assert mixture.counts().tolist() == [1000, 3000, 1200]
    drawn = mixture.draw(seed=1, epoch=0)
    assert np.bincount(corpus_of(drawn)).tolist() == [1000, 3000, 1200]
    per_pair = Counter(drawn.tolist())
    assert all(per_pair[i] == 1 for i in range(1000))  # weight 1: every pair once
    assert all(per_pair[i] == 4 for i in range(11_000, 11_300))  # weight 4: every pair four times
    sampled = [i for i in per_pair if 1000 <= i < 11_000]
    assert len(sampled) == 3000 and all(per_pair[i] == 1 for i in sampled)  # 0.3: a sample, no repeats
    again, next_epoch = mixture.draw(seed=1, epoch=0), mixture.draw(seed=1, epoch=1)
    assert np.array_equal(drawn, again) and not np.array_equal(drawn, next_epoch)


def test_a_fractional_weight_samples_uniformly_over_epochs():
    mixture = mixture_of("ab", (100, 1000), (1.0, 0.25))
    hits = Counter(i for epoch in range(80) for i in mixture.draw(3, epoch).tolist() if i >= 100)
    rates = np.array([hits[i] for i in range(100, 1100)]) / 80  # each pair drawn 1/4 of the epochs
    assert abs(rates.mean() - 0.25) < 1e-9 and rates.min() > 0.05 and rates.max() < 0.5


def test_weights_of_one_draw_nothing_and_keep_the_order_of_a_single_corpus():
    assert mixture_of("ab", (10, 20), (1, 1)).draw(1, 0) is None
    costs = np.random.default_rng(0).integers(3, 30, size=500).astype(np.int32)
    cfg = TrainConfig(max_tokens=120)
    plain = BatchOrder(costs, costs - 1, cfg, DistInfo())
    mixed = BatchOrder(costs, costs - 1, cfg, DistInfo(), mixture_of("ab", (200, 300), (1, 1)))
    assert all(np.array_equal(a, b) for a, b in zip(plain.batches(2), mixed.batches(2), strict=True))
    assert plain.describe() == mixed.describe()


def test_temperature_flattens_the_shares_of_groups_and_keeps_the_epoch_length():
    sizes, weights = (9000, 1000), (1.0, 1.0)
    flat = Mixture(sizes, weights, groups=(0, 1), temperature=5.0)
    counts = flat.counts()
    assert abs(counts.sum() - 10_000) <= 1
    share = np.array([0.9, 0.1]) ** (1 / 5)
    assert counts.tolist() == np.rint(share / share.sum() * 10_000).astype(int).tolist()
    assert Mixture(sizes, weights, groups=(0, 1), temperature=1.0).counts().tolist() == [9000, 1000]


@pytest.mark.parametrize(
    ("sizes", "weights", "groups", "temperature", "message"),
    [
        ((MAX_EPOCH_PAIRS,), (2.0,), (), 1.0, "an epoch would draw 2,147,483,648 pairs"),
        ((10**9, 10**9), (1e4, 1e4), (), 1.0, "at most 1,073,741,824"),
        ((1000, 1000), (1.0, 1e-4), (), 1.0, "data.corpora b: the weights and data.temperature draw no pair"),
        ((10**6, 10), (1.0, 1.0), (0, 1), 0.01, "data.corpora b: "),
    ],
)
def test_an_epoch_too_large_to_draw_or_without_a_corpus_is_refused(
    sizes, weights, groups, temperature, message
):
    """What the weights imply, once the sizes are known: refused before any epoch is drawn."""
    mixture = Mixture(sizes, weights, groups, temperature, names=("a", "b")[: len(sizes)])
    with pytest.raises(DataError, match=message):
        mixture.check()


def test_the_mixtures_above_pass_the_check():
    for sizes, weights in ((SIZES, WEIGHTS), ((1000, 100), (1.0, 0.01))):
        mixture_of("abc"[: len(sizes)], sizes, weights).check()


@pytest.mark.parametrize("world", [1, 2])
def test_resume_continues_exactly_and_ranks_share_each_draw_disjointly(world):
    sizes = (400, 100)
    costs = np.random.default_rng(1).integers(3, 40, size=sum(sizes)).astype(np.int32)
    cfg = TrainConfig(max_tokens=200, accum_steps=2)
    mixture = mixture_of("ab", sizes, (0.5, 3.0))
    orders = [BatchOrder(costs, costs, cfg, DistInfo(rank, world), mixture) for rank in range(world)]
    shared = Counter(int(i) for order in orders for batch in order.batches(1) for i in batch)
    assert shared == Counter(mixture.draw(cfg.seed, 1).tolist())
    at = Progress()
    steps = [orders[0].next_step(at).batches for _ in range(9)]
    stopped = Progress(epoch=0, next_batch=0)
    fresh = BatchOrder(costs, costs, cfg, DistInfo(0, world), mixture)
    for _ in range(4):
        fresh.next_step(stopped)
    resumed = BatchOrder(costs, costs, cfg, DistInfo(0, world), mixture)  # a new process at step 4
    later = [resumed.next_step(replace(stopped)).batches]
    assert all(np.array_equal(a, b) for a, b in zip(steps[4], later[0], strict=True))
    assert "weights a 0.5, b 3" in orders[0].describe()
