"""`seq2seq.batching` on degenerate work: no examples give no batches, and no batch is ever empty."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seq2seq.batching import pad, token_batches


@pytest.mark.parametrize("costs", [[], [3], [1] * 7, [50, 1, 1]], ids=["none", "one", "equal", "mixed"])
@pytest.mark.parametrize("seed", [None, 0])
def test_batches_cover_every_example_once_and_none_is_empty(costs, seed):
    batches = token_batches(np.array(costs, dtype=np.int64), 4, seed)
    assert all(len(b) for b in batches)
    assert sorted(int(i) for b in batches for i in b) == list(range(len(costs)))


def test_padding_no_sequences_gives_an_empty_batch():
    assert pad([]).shape == (0, 0) and pad([]).dtype == torch.long
    assert pad([[5, 6], [7]]).tolist() == [[5, 6], [7, 0]]
