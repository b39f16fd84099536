"""A batch carries the reference links of the pairs it holds, and only theirs: each row's own, in the
batch's row order, across joined corpora, and none for a pair augmentation modified."""

from __future__ import annotations

import numpy as np
import torch
from torch.testing import assert_close

from seq2seq.config import TrainConfig
from seq2seq.data.links import Links, reference_attention
from seq2seq.data.parallel import JoinedCorpus, ParallelData
from seq2seq.training.distributed import DistInfo
from seq2seq.training.order import BatchOrder
from seq2seq.training.state import Progress
from tests.unit.data.test_augmented import MIXTURE, corpus


def diagonal(data: ParallelData, shift: int) -> Links:
    """Target piece t linked to source position t + shift (and to the next one, when it has one)."""
    links = []
    for src, tgt in zip(*data.pairs(range(len(data))), strict=True):
        width = len(src) - shift
        sources = [{t + shift, min(t + 1, width - 1) + shift} for t in range(min(len(tgt), width))]
        links.append([(t, s) for t, linked in enumerate(sources) for s in sorted(linked)])
    return Links.from_lists(links)


def as_lists(links: torch.Tensor, rows: int) -> list[set[tuple[int, int]]]:
    found: list[set[tuple[int, int]]] = [set() for _ in range(rows)]
    for row, t, s in links.tolist():
        found[row].add((t, s))
    return found


def test_a_batch_holds_each_rows_own_links_in_its_row_order():
    data = ParallelData.from_lists([[5, 6, 7], [8], [9, 10]], [[11, 12], [13, 14, 15], [16]])
    data.links = Links.from_lists([[(0, 2), (1, 0)], [], [(0, 0), (0, 1)]])
    batch = data.batch([2, 0, 1])
    assert batch.links is not None and batch.links.dtype == torch.int64
    assert as_lists(batch.links, 3) == [{(0, 0), (0, 1)}, {(0, 2), (1, 0)}, set()]
    assert_close(batch.to(torch.device("cpu")).links, batch.links)


def test_joined_corpora_and_modified_pairs_keep_only_their_own_links():
    data, augment = corpus()
    for part, shift in zip(data.parts, (1, 0), strict=True):  # corpus a's sources start with a tag
        part.links = diagonal(part, shift)
    own = [as_lists(p.links.batch(range(len(p))), len(p)) for p in data.parts if p.links is not None]
    whole = [*own[0], *own[1]]
    cfg = TrainConfig(max_tokens=300, seed=3)
    order = BatchOrder(data.costs(), data.target_tokens(), cfg, DistInfo(), MIXTURE, augment)
    step = order.next_step(Progress())
    assert step.variants is not None
    modified = linked = 0
    for rows, batch in zip(step.batches, step.build(data), strict=True):
        assert batch.links is not None
        found = as_lists(batch.links, len(rows))
        for example, links in zip(rows.tolist(), found, strict=True):
            if example >= len(data):  # a modified pair: its pieces changed, so it gets no guidance
                modified += 1
                assert links == set()
            else:
                linked += 1
                assert links == whole[example]
    assert modified and linked


def test_a_joined_batch_renumbers_each_parts_rows():
    parts = [ParallelData.from_lists([[5, 6]], [[7]]), ParallelData.from_lists([[8], [9, 10]], [[11], [12]])]
    parts[0].links = Links.from_lists([[(0, 1)]])
    parts[1].links = Links.from_lists([[(0, 0)], [(0, 1)]])
    batch = JoinedCorpus.of(parts).batch(np.array([2, 0, 1]))
    assert batch.links is not None
    assert as_lists(batch.links, 3) == [{(0, 1)}, {(0, 1)}, {(0, 0)}]


def test_the_reference_spreads_each_linked_row_evenly_and_leaves_the_others_zero():
    links = torch.tensor([[0, 0, 1], [0, 0, 3], [0, 2, 0], [1, 1, 2]])
    reference = reference_attention(links, (2, 3, 4))
    expected = torch.zeros(2, 3, 4)
    expected[0, 0, [1, 3]] = 0.5
    expected[0, 2, 0] = 1.0
    expected[1, 1, 2] = 1.0
    assert_close(reference, expected)
