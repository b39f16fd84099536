"""How long an output may grow: a * |source| + b tokens (<eos> included), at least min_len + 1, within
the model's positions, long enough for a forced prefix; and the searches obey it."""

import pytest
import torch

from seq2seq.decoding.length_limits import (
    max_output_lengths,
    output_limits,
    output_limits_of,
    output_limits_of_counts,
    prefix_limits,
)
from seq2seq.decoding.prefix import Forced
from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.special import EOS, PAD
from tests.conftest import make_model, random_ids
from tests.unit.decoding.test_search import settings


def test_the_limit_is_a_times_the_source_plus_b_within_min_len_and_the_positions():
    s = settings(max_len_a=1.5, max_len_b=2, min_len=3)
    assert output_limits(torch.tensor([0, 1, 4, 100]), s, 32).tolist() == [4, 4, 8, 31]
    src = torch.tensor([[5, 6, EOS, PAD], [5, 6, 7, EOS]])  # 3 and 4 tokens, padding not counted
    assert max_output_lengths(src, s, 32).tolist() == [6, 8]


def test_a_prefix_lengthens_the_limit_to_hold_it_and_an_eos():
    s = settings(max_len_a=0.0, max_len_b=3)
    src = torch.tensor([[5, EOS], [6, EOS]])
    prefix = Forced.of([[7, 7, 7, 7, 7], []], torch.device("cpu"))
    assert output_limits_of(src, s, 32, prefix).tolist() == [6, 3]
    assert output_limits_of(src, s, 5, prefix).tolist() == [4, 3]  # never past the positions


@pytest.mark.parametrize("a", [0.0, 0.3, 0.7, 1.1, 1.2, 1.4, 1.5, 2.1, 2.3, 0.123456789, 3.7])
@pytest.mark.parametrize("b", [0, 1, 10])
def test_counts_give_the_tensors_limits(a, b):
    """An engine given token counts gets the limits s2s's search computes from tensors, to the token:
    both in float32, where a * |source| may reach an integer that float64 falls short of (1.4 * 45)."""
    s = settings(max_len_a=a, max_len_b=b, min_len=2)
    counts = list(range(200))
    prefixes = [n % 7 * 5 for n in counts]
    for positions in (16, 256):
        expected = output_limits(torch.tensor(counts), s, positions)
        assert output_limits_of_counts(counts, s, positions) == expected.tolist()
        forced = prefix_limits(expected, torch.tensor(prefixes), positions).tolist()
        assert output_limits_of_counts(counts, s, positions, prefixes) == forced


def test_max_length_respected():
    model = make_model(seed=5)
    src = random_ids(6, 10)
    s = settings(beam=3, nbest=3, max_len_a=0.0, max_len_b=3)
    for search in (greedy_search, beam_search):
        for hyps in search(model, src, s):
            assert all(len(h.tokens) <= 2 for h in hyps)  # the limit counts <eos>


def test_max_length_scales_with_source():
    model = make_model(seed=6)
    src = random_ids(2, 6)
    src[0, 2:] = PAD
    for hyps in beam_search(model, src, settings(beam=2, max_len_a=1.0, max_len_b=0)):
        assert hyps  # every sentence gets a hypothesis even when cut by the limit
    short = greedy_search(model, src, settings(beam=1, nbest=1, max_len_a=1.0, max_len_b=0))
    assert len(short[0][0].tokens) <= 1 and len(short[1][0].tokens) <= 5
