"""Target-prefix decoding: every output starts with its prefix, the search continues from it, and its
score counts only what was searched (CTranslate2's rule); batched equals one at a time, cached equals
uncached, greedy forced along its own choices changes nothing."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.decoding.prefix import Forced
from seq2seq.decoding.search import beam_search, greedy_search, search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.special import BOS, EOS, PAD
from tests.conftest import make_model, random_ids
from tests.unit.decoding.test_search import SRC, TABLE, A, B, C, ScriptedModel, settings


def forced(*prefixes: list[int]) -> Forced:
    found = Forced.of(list(prefixes), torch.device("cpu"))
    assert found is not None
    return found


def test_no_prefix_anywhere_is_no_forcing():
    assert Forced.of([[], []], torch.device("cpu")) is None
    assert Forced.of(None, torch.device("cpu")) is None


@pytest.mark.parametrize("beam", [1, 2])
def test_the_prefix_is_given_and_only_the_rest_is_scored(beam):
    """TABLE prefers A </s>; forced to start with B, the search goes on to B C </s>, and the score is
    the log-probability of what followed B (C, then </s>), not of B itself."""
    s = settings(beam=beam, nbest=1)
    assert search(ScriptedModel(TABLE), SRC, s)[0][0].tokens == [A]
    (best,) = search(ScriptedModel(TABLE), SRC, s, forced([B]))[0]
    assert best.tokens == [B, C]
    assert best.score == pytest.approx(math.log(0.99 * 1.0), abs=1e-4)


def test_a_whole_prefix_is_forced_even_against_the_model_and_the_length_normalizer_counts_it():
    s = settings(beam=2, nbest=1, length_penalty=1.0, length_norm="power")
    (best,) = beam_search(ScriptedModel(TABLE), SRC, s, forced([C, A, A]))[0]
    assert best.tokens[:3] == [C, A, A]
    # after C A A the table has nothing: </s> (log 1), over 4 steps (3 given tokens and the </s>)
    assert best.tokens == [C, A, A] and best.score == pytest.approx(0.0, abs=1e-4)


@pytest.mark.parametrize("beam", [1, 3])
def test_a_prefix_longer_than_the_length_limit_still_fits(beam):
    s = SearchSettings(beam=beam, max_len_a=0.0, max_len_b=2)  # 1 token and </s>
    model = make_model(vocab=23)
    src = random_ids(2, 5)
    prefix = [[7, 8, 9, 10, 11], []]
    out = search(model, src, s, forced(*prefix))
    assert out[0][0].tokens[:5] == prefix[0]
    assert len(out[1][0].tokens) <= 1  # the sentence without a prefix keeps its own limit


@pytest.mark.parametrize("beam", [1, 3])
def test_batched_prefixes_of_different_lengths_equal_one_sentence_at_a_time(beam):
    model = make_model(vocab=23)
    src = random_ids(4, 6, seed=2)
    src[1, 4:] = PAD
    prefixes = [[5, 6], [], [7], [8, 9, 10]]
    s = SearchSettings(beam=beam, nbest=min(beam, 2), max_len_a=1.0, max_len_b=3)
    together = search(model, src, s, forced(*prefixes))
    for i, prefix in enumerate(prefixes):
        row = src[i : i + 1, : int((src[i] != PAD).sum())]
        alone = search(model, row, s, Forced.of([prefix], torch.device("cpu")))[0]
        assert [h.tokens for h in together[i]] == [h.tokens for h in alone]
        assert [h.score for h in together[i]] == pytest.approx([h.score for h in alone], abs=1e-5)
        assert all(h.tokens[: len(prefix)] == prefix for h in alone)


@pytest.mark.parametrize("beam", [1, 3])
def test_cached_prefix_decoding_equals_uncached(beam):
    model = make_model(vocab=23)
    src = random_ids(3, 6, seed=4)
    prefix = forced([5, 6], [7], [])
    s = SearchSettings(beam=beam, nbest=1, max_len_a=1.0, max_len_b=3)
    cached = search(model, src, s, prefix)
    uncached = search(model, src, SearchSettings(**{**s.__dict__, "use_cache": False}), prefix)
    assert [h[0].tokens for h in cached] == [h[0].tokens for h in uncached]
    assert [h[0].score for h in cached] == pytest.approx([h[0].score for h in uncached], abs=1e-5)


def test_greedy_forced_along_its_own_choices_gives_its_own_output():
    """Forcing the first tokens greedy would choose anyway changes no token; the score loses exactly
    their log-probabilities (a prefix is given, not scored), those the search would have added: over
    the tokens it may choose (never <pad> or <bos>, no </s> before min_len)."""
    model = make_model(vocab=23, seed=5)
    src = random_ids(6, 7, seed=6)
    s = SearchSettings(beam=1, length_penalty=0.0, max_len_a=1.0, max_len_b=4)
    free = greedy_search(model, src, s)
    prefixes = [h.tokens[:2] for (h,) in free]
    given = greedy_search(model, src, s, forced(*prefixes))
    for row, ((mine,), (theirs,), prefix) in enumerate(zip(free, given, prefixes, strict=True)):
        assert theirs.tokens == mine.tokens
        with torch.no_grad():
            logits = model(src[row : row + 1], torch.tensor([[BOS, *prefix[:-1]]]))[0]  # (P, V)
        logits[:, [PAD, BOS]] = -math.inf
        logits[: s.min_len, EOS] = -math.inf
        logp = logits.log_softmax(-1)
        cost = sum(float(logp[i, token]) for i, token in enumerate(prefix))
        assert theirs.score == pytest.approx(mine.score - cost, abs=1e-4)


def test_an_eos_the_model_prefers_inside_the_prefix_does_not_end_it():
    table = {(): {EOS: 0.9, A: 0.1}, (A,): {EOS: 0.9, B: 0.1}, (A, B): {C: 0.6, EOS: 0.4}}
    (best,) = greedy_search(ScriptedModel(table), SRC, settings(beam=1, nbest=1), forced([A, B]))[0]
    assert best.tokens == [A, B, C]
