"""The batch order: every rank knows each step's token count over all ranks without asking them."""

from __future__ import annotations

import numpy as np
import pytest

from seq2seq.config import TrainConfig
from seq2seq.data.parallel import ParallelData
from seq2seq.training.distributed import DistInfo
from seq2seq.training.order import BatchOrder
from seq2seq.training.state import Progress


def random_pairs(count: int, seed: int = 0) -> ParallelData:
    rng = np.random.default_rng(seed)
    src = [list(rng.integers(5, 50, rng.integers(1, 30))) for _ in range(count)]
    tgt = [list(rng.integers(5, 50, rng.integers(1, 30))) for _ in range(count)]
    return ParallelData.from_lists(src, tgt)


@pytest.mark.parametrize(("world", "accum_steps"), [(1, 1), (2, 1), (3, 2)])
def test_a_steps_total_tokens_are_the_real_targets_of_its_batches_on_every_rank(world, accum_steps):
    data = random_pairs(301)
    cfg = TrainConfig(max_tokens=200, accum_steps=accum_steps, seed=7)
    orders = [
        BatchOrder(data.costs(), data.target_tokens(), cfg, DistInfo(r, world, r)) for r in range(world)
    ]
    positions = [Progress() for _ in range(world)]
    steps = 0
    while positions[0].epoch < 2:  # across an epoch boundary
        taken = [order.next_step(at) for order, at in zip(orders, positions, strict=True)]
        counted = sum(data.batch(b).num_tgt_tokens for step in taken for b in step.batches)
        assert [step.total_tokens for step in taken] == [counted] * world
        steps += 1
    assert steps > 2 * 3  # several steps per epoch: the comparison is not trivial
