import dataclasses
import math

import pytest
import torch

from seq2seq.decoding import ladder
from seq2seq.decoding.hypothesis import length_normalizer
from seq2seq.decoding.length_limits import max_output_lengths
from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.decoding.search import search as search_for_settings
from seq2seq.decoding.settings import SearchSettings
from seq2seq.models.encoder_decoder import Memory
from seq2seq.special import BOS, EOS, PAD
from tests.conftest import make_model, random_ids

A, B, C = 4, 5, 6
VOCAB = 7
EPS = 1e-6


class PrefixCache:
    """The scripted model's cache: the whole prefix of each row."""

    def __init__(self) -> None:
        self.tokens: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.tokens is None else self.tokens.size(1)

    def reorder(self, rows: torch.Tensor, memory_rows: torch.Tensor | None) -> None:
        self.tokens = self.tokens.index_select(0, rows)


class ScriptedModel:
    """Next-token probabilities written by hand, per prefix (tokens after <bos>); <eos> when unlisted.

    `tables` maps a source's first token to its table; a plain table applies to every source.
    """

    max_positions = 32

    def __init__(self, tables: dict) -> None:
        self.tables = tables if all(isinstance(k, int) for k in tables) else None
        self.table = tables
        self.rows_per_step: list[int] = []

    def encode(self, src: torch.Tensor) -> Memory:
        return Memory(src.float()[..., None], (src != PAD)[:, None, None, :])

    def new_cache(self) -> PrefixCache:
        return PrefixCache()

    def decode(self, tgt, memory, cache=None):
        if cache is not None:
            cache.tokens = tgt if cache.tokens is None else torch.cat([cache.tokens, tgt], dim=1)
            tgt = cache.tokens
        self.rows_per_step.append(tgt.size(0))
        probs = torch.full((tgt.size(0), VOCAB), EPS)
        first_source = memory.states[:, 0, 0].long().tolist()
        beams = tgt.size(0) // len(first_source)  # beam search: one memory row per sentence
        for row, prefix in enumerate(tgt[:, 1:].tolist()):
            table = self.tables[first_source[row // beams]] if self.tables else self.table
            for token, p in table.get(tuple(prefix), {EOS: 1.0}).items():
                probs[row, token] = p
        return probs.log()[:, None, :]  # (N, 1, V): the next-token scores


TABLE = {
    (): {A: 0.5, B: 0.4, C: 0.1},
    (A,): {EOS: 0.9, C: 0.1},
    (B,): {C: 0.99, EOS: 0.01},
    (B, C): {EOS: 1.0},
    (A, C): {EOS: 1.0},
}
SRC = torch.tensor([[A, B, EOS]])


def settings(**kw) -> SearchSettings:
    return SearchSettings(
        **{"beam": 2, "nbest": 2, "length_penalty": 0.0, "max_len_a": 0.0, "max_len_b": 10, **kw}
    )


def test_scripted_beam_search_hypotheses_and_scores():
    hyps = beam_search(ScriptedModel(TABLE), SRC, settings())[0]
    assert [h.tokens for h in hyps] == [[A], [B, C]]
    assert hyps[0].score == pytest.approx(math.log(0.5 * 0.9), abs=1e-4)
    assert hyps[1].score == pytest.approx(math.log(0.4 * 0.99 * 1.0), abs=1e-4)


def test_unlikely_early_eos_do_not_end_the_search_before_the_best_hypothesis():
    """A peaked model: beam 1 is junk, so the strong beam's unlikely <eos> ranks 2nd at every step.

    Stopping at K finished hypotheses (fairseq's rule) would return one of those; the best
    hypothesis, A B C, ends a step later with almost all the probability.
    """
    table = {
        (): {A: 0.98, C: 0.02},
        (A,): {B: 0.97, EOS: 0.03},
        (A, B): {C: 0.97, EOS: 0.03},
        (A, B, C): {EOS: 1.0},
        (C,): {EOS: 1.0},
    }
    hyps = beam_search(ScriptedModel(table), SRC, settings(beam=2, nbest=1, length_penalty=0.0))[0]
    assert hyps[0].tokens == [A, B, C]
    assert hyps[0].score == pytest.approx(math.log(0.98 * 0.97 * 0.97), abs=1e-4)


@pytest.mark.parametrize(
    "norm, alpha, divide",
    [("gnmt", 2.0, lambda tokens: ((5 + tokens + 1) / 6) ** 2), ("power", 1.0, lambda tokens: tokens + 1)],
)
def test_scripted_length_penalty_prefers_the_longer_hypothesis(norm, alpha, divide):
    hyps = beam_search(ScriptedModel(TABLE), SRC, settings(length_penalty=alpha, length_norm=norm))[0]
    assert [h.tokens for h in hyps] == [[B, C], [A]]
    assert hyps[0].score == pytest.approx(math.log(0.4 * 0.99) / divide(2), abs=1e-4)
    assert hyps[1].score == pytest.approx(math.log(0.45) / divide(1), abs=1e-4)


@pytest.mark.parametrize("norm", ["power", "gnmt"])
def test_length_normalization_searches_past_an_early_best_eos(norm):
    """<eos> after A is the best candidate of step 2 by log-probability, but B C, longer, is better
    once normalized: stopping at the best candidate's <eos> (right only without normalization) misses it."""
    table = {
        (): {A: 0.55, B: 0.45},
        (A,): {EOS: 0.9, C: 0.1},
        (B,): {C: 0.95, EOS: 0.05},
        (B, C): {EOS: 0.95, C: 0.05},
        (A, C): {EOS: 1.0},
    }
    s = settings(beam=2, nbest=1, length_penalty=1.0 if norm == "power" else 3.0, length_norm=norm)
    best = beam_search(ScriptedModel(table), SRC, s)[0][0]
    assert best.tokens == [B, C]
    assert best.score == pytest.approx(math.log(0.45 * 0.95 * 0.95) / length_normalizer(2, s), abs=1e-4)
    assert beam_search(ScriptedModel(table), SRC, dataclasses.replace(s, length_penalty=0.0))[0][
        0
    ].tokens == [A]


def test_patience_keeps_searching_past_beam_ended_hypotheses():
    """Beam 2: <eos> after B and after B C end two hypotheses by step 3 while A B C, far likelier, is
    still growing. Patience 1 (CTranslate2's default) stops there; patience 2 waits for four ended
    hypotheses, or until no live beam can win, and finds A B C."""
    table = {
        (): {A: 0.6, B: 0.4},
        (A,): {B: 0.9, EOS: 0.1},
        (B,): {EOS: 0.55, C: 0.45},
        (A, B): {C: 0.9, EOS: 0.1},
        (B, C): {EOS: 0.9, A: 0.1},
        (A, B, C): {EOS: 0.95, C: 0.05},
    }
    found = {}
    for patience in (1.0, 2.0):
        s = settings(beam=2, nbest=1, length_penalty=1.0, patience=patience)
        found[patience] = beam_search(ScriptedModel(table), SRC, s)[0][0]
    assert found[1.0].tokens == [B, C]
    assert found[1.0].score == pytest.approx(math.log(0.4 * 0.45 * 0.9) / 3, abs=1e-4)
    assert found[2.0].tokens == [A, B, C]
    assert found[2.0].score == pytest.approx(math.log(0.6 * 0.9 * 0.9 * 0.95) / 4, abs=1e-4)


def test_scripted_greedy_takes_the_early_eos():
    hyps = greedy_search(ScriptedModel(TABLE), SRC, settings(beam=1, nbest=1))[0]
    assert hyps[0].tokens == [A] and hyps[0].score == pytest.approx(math.log(0.45), abs=1e-4)


def test_min_length_forbids_empty_output():
    table = {(): {EOS: 0.9, A: 0.1}}
    for search in (greedy_search, beam_search):
        hyps = search(ScriptedModel(table), SRC, settings(min_len=1))[0]
        assert hyps[0].tokens == [A]
    assert greedy_search(ScriptedModel(table), SRC, settings(min_len=0))[0][0].tokens == []


def test_finished_sentences_stop_growing_and_leave_the_batch():
    short = {(): {A: 1.0}, (A,): {EOS: 1.0}}
    long = {(): {B: 1.0}, (B,): {B: 1.0}, (B, B): {B: 1.0}, (B, B, B): {EOS: 1.0}}
    for search in (greedy_search, beam_search):
        model = ScriptedModel({A: short, B: long})
        hyps = search(model, torch.tensor([[A, EOS], [B, EOS]]), settings(beam=1, nbest=1))
        assert [h[0].tokens for h in hyps] == [[A], [B, B, B]]
        assert model.rows_per_step == [2, 2, 1, 1]


class EosBiased:
    """A real model whose <eos> score rises along the output, so hypotheses end early and unevenly.

    At target position p, after reading token x, <eos> gets `slope * p * (1 + x % 3)` more logit: the
    model itself chooses when each hypothesis ends, at different steps for different sentences and
    beams. The bias depends on the position and the token only, so cached and uncached decoding
    see the same scores.
    """

    def __init__(self, model, slope: float = 1.0) -> None:
        self.model, self.slope, self.max_positions = model, slope, model.max_positions
        self.rows_per_step: list[int] = []

    def encode(self, src):
        return self.model.encode(src)

    def new_cache(self):
        return self.model.new_cache()

    def decode(self, tgt, memory, cache=None):
        self.rows_per_step.append(tgt.size(0))
        offset = cache.length if cache is not None else 0
        logits = self.model.decode(tgt, memory, cache).clone()  # (N, T, V) for the positions of tgt
        positions = torch.arange(offset, offset + tgt.size(1), device=tgt.device)  # (T,)
        logits[..., EOS] += self.slope * positions * (1 + tgt % 3)
        return logits


def ends_early(hyps, src, s: SearchSettings) -> bool:
    """Some hypotheses ended by choice (<eos> before their length limit), at more than one length."""
    limits = max_output_lengths(src, s, 32).tolist()
    lengths = [(len(h.tokens), limit) for nbest, limit in zip(hyps, limits, strict=True) for h in nbest]
    return any(n < limit - 1 for n, limit in lengths) and len({n for n, _ in lengths}) > 1


def test_rows_shrink_when_a_sentence_finishes():
    model = EosBiased(make_model(seed=3))
    src = random_ids(6, 6)
    hyps = greedy_search(model, src, settings(beam=1, nbest=1, max_len_a=0.0, max_len_b=12))
    assert ends_early(hyps, src, settings(beam=1, nbest=1, max_len_a=0.0, max_len_b=12))
    calls = model.rows_per_step
    assert calls == sorted(calls, reverse=True) and calls[-1] < calls[0]


@pytest.mark.parametrize("beam", [1, 3])
def test_a_batch_held_at_few_sizes_finds_what_an_exact_batch_finds(beam, monkeypatch):
    """The rows a held batch decodes past the live ones (`held_rows`) change no hypothesis or score."""
    model = EosBiased(make_model(seed=14), slope=0.3)
    src = random_ids(40, 10, seed=11)
    for i in range(40):
        src[i, 3 + i % 7 :] = PAD  # length limits at 7 different steps, and early <eos> between
    s = settings(beam=beam, nbest=beam, length_penalty=1.0, max_len_a=1.0, max_len_b=4)
    monkeypatch.setattr(ladder, "RUNGS_PER_OCTAVE", 0)
    exact = search_for_settings(model, src, s)
    exact_rows, model.rows_per_step = model.rows_per_step, []
    monkeypatch.setattr(ladder, "RUNGS_PER_OCTAVE", 2)  # coarse: more rows past the live ones
    held = search_for_settings(model, src, s)
    assert ends_early(exact, src, s)
    assert len(set(model.rows_per_step)) < len(set(exact_rows))
    assert any(h > e for h, e in zip(model.rows_per_step, exact_rows, strict=True))
    for e, h in zip(exact, held, strict=True):
        assert [x.tokens for x in e] == [x.tokens for x in h]
        assert [x.score for x in e] == pytest.approx([x.score for x in h], abs=1e-5)


@pytest.mark.parametrize("beam", [1, 3])
def test_hypotheses_that_end_early_batched_equals_one_at_a_time(beam):
    model = EosBiased(make_model(seed=8))
    src = random_ids(5, 8, seed=3)
    src[1, 4:] = PAD
    src[3, 6:] = PAD
    s = settings(beam=beam, nbest=beam, length_penalty=1.0, max_len_a=1.0, max_len_b=4)
    batched = beam_search(model, src, s)
    assert ends_early(batched, src, s)
    for i in range(5):
        alone = beam_search(model, src[i : i + 1, : int((src[i] != PAD).sum())], s)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batched[i]], abs=1e-4)


@pytest.mark.parametrize("beam", [1, 4])
def test_hypotheses_that_end_early_cached_equals_uncached(beam):
    model = EosBiased(make_model(seed=9))
    src = random_ids(4, 7, seed=5)
    src[0, 3:] = PAD
    base = settings(beam=beam, nbest=beam, max_len_a=1.0, max_len_b=5)
    fast = beam_search(model, src, base)
    assert ends_early(fast, src, base)
    slow = beam_search(model, src, dataclasses.replace(base, use_cache=False))
    for f, s in zip(fast, slow, strict=True):
        assert [h.tokens for h in f] == [h.tokens for h in s]
        assert [h.score for h in f] == pytest.approx([h.score for h in s], abs=1e-4)


@torch.no_grad()
def forced_score(model, src_row: torch.Tensor, tokens: list[int], s: SearchSettings) -> float:
    """The score of `tokens` + <eos> under teacher forcing: what search must have reported for it.

    Each position's log-probabilities are those of the tokens the search may choose there, renormalized:
    never <pad> or <bos>, no <eos> before `min_len`, and only <eos> (log 1 = 0) at the length limit.
    """
    tgt = torch.tensor([[BOS, *tokens]])
    logits = model.decode(tgt, model.encode(src_row)).float()[0]  # (T, V)
    logits[:, [PAD, BOS]] = float("-inf")
    logits[: s.min_len, EOS] = float("-inf")
    limit = int(max_output_lengths(src_row, s, model.max_positions))
    logp = logits.log_softmax(-1)
    total = sum(float(logp[i, tok]) for i, tok in enumerate([*tokens, EOS]) if i < limit - 1)
    return total / length_normalizer(len(tokens), s, chose_end=len(tokens) < limit - 1)


@pytest.mark.parametrize("norm", ["power", "gnmt"])
@pytest.mark.parametrize("beam", [1, 4])
def test_every_hypothesis_scores_what_teacher_forcing_gives_it(beam, norm):
    """Catches a finished hypothesis recorded with the wrong beam's tokens, score or length."""
    model = EosBiased(make_model(seed=12), slope=0.2)  # some end by choice, some at their length limit
    src = random_ids(4, 7, seed=9)
    src[1, 4:] = PAD
    s = settings(beam=beam, nbest=beam, length_penalty=1.0, length_norm=norm, max_len_a=1.0, max_len_b=4)
    hyps = search_for_settings(model, src, s)
    assert ends_early(hyps, src, s)
    limits = max_output_lengths(src, s, model.max_positions).tolist()
    assert any(
        len(h.tokens) == limit - 1 for nbest, limit in zip(hyps, limits, strict=True) for h in nbest
    )  # cut too
    for i, nbest in enumerate(hyps):
        row = src[i : i + 1, : int((src[i] != PAD).sum())]
        for h in nbest:
            assert h.score == pytest.approx(forced_score(model, row, h.tokens, s), abs=1e-4), h


def test_hypotheses_that_end_early_beam_one_equals_greedy():
    model = EosBiased(make_model(seed=10))
    src = random_ids(6, 8, seed=7)
    src[2, 5:] = PAD
    s = settings(beam=1, nbest=1, length_penalty=1.0, max_len_a=1.0, max_len_b=4)
    greedy, beam = greedy_search(model, src, s), beam_search(model, src, s)
    assert ends_early(greedy, src, s)
    for g, b in zip(greedy, beam, strict=True):
        assert g[0].tokens == b[0].tokens and g[0].score == pytest.approx(b[0].score, abs=1e-5)


@pytest.mark.parametrize("use_cache", [True, False])
def test_beam_one_equals_greedy(use_cache):
    model = make_model(seed=1)
    src = random_ids(5, 8)
    src[2, 5:] = PAD
    s = settings(beam=1, nbest=1, length_penalty=1.0, max_len_a=1.0, max_len_b=4, use_cache=use_cache)
    greedy, beam = greedy_search(model, src, s), beam_search(model, src, s)
    for g, b in zip(greedy, beam, strict=True):
        assert g[0].tokens == b[0].tokens
        assert g[0].score == pytest.approx(b[0].score, abs=1e-5)


def test_batched_beam_equals_one_sentence_at_a_time():
    model = make_model(seed=2)
    src = random_ids(4, 9)
    src[1, 4:] = PAD
    src[3, 6:] = PAD
    s = settings(beam=3, nbest=3, length_penalty=1.0, max_len_a=1.0, max_len_b=3)
    batched = beam_search(model, src, s)
    for i in range(4):
        row = src[i : i + 1, : int((src[i] != PAD).sum())]
        alone = beam_search(model, row, s)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batched[i]], abs=1e-4)


@pytest.mark.parametrize("beam", [1, 4])
def test_cached_search_equals_uncached(beam):
    model = make_model(seed=4)
    src = random_ids(3, 7)
    src[0, 3:] = PAD
    base = settings(beam=beam, nbest=1, max_len_a=1.0, max_len_b=5)
    fast = beam_search(model, src, base)
    slow = beam_search(model, src, dataclasses.replace(base, use_cache=False))
    for f, s in zip(fast, slow, strict=True):
        assert f[0].tokens == s[0].tokens and f[0].score == pytest.approx(s[0].score, abs=1e-4)


def test_nbest_sorted_by_score():
    model = make_model(seed=7)
    src = random_ids(3, 6)
    for hyps in beam_search(model, src, settings(beam=5, nbest=5, length_penalty=1.0)):
        assert len(hyps) == 5
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)


def test_length_normalizer_formulas():
    gnmt, power = SearchSettings(length_norm="gnmt"), SearchSettings(length_norm="power", length_penalty=0.5)
    assert length_normalizer(6, gnmt) == pytest.approx(2.0)  # (5 + 6 tokens + <eos>) / 6
    assert length_normalizer(6, gnmt, chose_end=False) == pytest.approx(2.0)  # gnmt counts it anyway
    # power counts the decoded steps, as CTranslate2 and Hugging Face do: a chosen <eos> is one
    assert length_normalizer(8, power) == pytest.approx(3.0)
    assert length_normalizer(9, power, chose_end=False) == pytest.approx(3.0)  # cut at the limit
    assert length_normalizer(0, power) == 1.0  # an empty hypothesis: its <eos>
    assert length_normalizer(5, SearchSettings(length_penalty=0.0)) == 1.0
    lengths = torch.tensor([0, 3, 4])
    assert length_normalizer(lengths, power).tolist() == pytest.approx([1.0, 2.0, 5**0.5])
    chose = torch.tensor([True, True, False])
    assert length_normalizer(lengths, power, chose).tolist() == pytest.approx([1.0, 2.0, 2.0])


def test_padding_and_bos_are_never_generated():
    from seq2seq.data.tokenizer import BOS

    table = {(): {PAD: 0.6, BOS: 0.3, A: 0.1}, (A,): {PAD: 0.9, EOS: 0.1}}
    for search in (greedy_search, beam_search):
        hyps = search(ScriptedModel(table), SRC, settings(beam=2, nbest=1))
        assert hyps[0][0].tokens == [A]


def sample_settings(**kw) -> SearchSettings:
    return settings(beam=1, nbest=1, max_len_a=1.0, max_len_b=5, sampling=True, **kw)


def test_sampling_from_the_top_1_token_is_greedy():
    model = make_model(seed=13)
    src = random_ids(4, 6, seed=2)
    greedy = greedy_search(model, src, settings(beam=1, nbest=1, max_len_a=1.0, max_len_b=5))
    sampled = greedy_search(model, src, sample_settings(top_k=1, temperature=0.7, seed=3))
    assert [h[0].tokens for h in sampled] == [h[0].tokens for h in greedy]
    assert [h[0].score for h in sampled] == pytest.approx([h[0].score for h in greedy], abs=1e-5)


def test_sampling_is_seeded_and_varies_with_the_seed():
    model = make_model(seed=13)
    src = random_ids(6, 6, seed=2)
    draw = lambda seed: [h[0].tokens for h in greedy_search(model, src, sample_settings(seed=seed))]  # noqa: E731
    assert draw(1) == draw(1)
    assert draw(1) != draw(2)
    assert draw(1) != [
        h[0].tokens for h in greedy_search(model, src, settings(beam=1, nbest=1, max_len_a=1.0, max_len_b=5))
    ]


def test_a_tiny_top_p_keeps_only_the_most_likely_token():
    model = make_model(seed=13)
    src = random_ids(4, 6, seed=2)
    greedy = greedy_search(model, src, settings(beam=1, nbest=1, max_len_a=1.0, max_len_b=5))
    nucleus = greedy_search(model, src, sample_settings(top_p=1e-6, seed=5))
    assert [h[0].tokens for h in nucleus] == [h[0].tokens for h in greedy]


def repeats(tokens: list[int], n: int) -> bool:
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("beam", [1, 3])
def test_no_repeat_ngram_never_repeats(n, beam):
    model = make_model(seed=8)  # a random model that loves repeating one token
    src = random_ids(5, 8, seed=3)
    base = settings(beam=beam, nbest=beam, max_len_a=1.0, max_len_b=6)
    assert any(repeats(h.tokens, n) for hyps in search_for_settings(model, src, base) for h in hyps)
    for hyps in search_for_settings(model, src, dataclasses.replace(base, no_repeat_ngram=n)):
        assert hyps and all(not repeats(h.tokens, n) for h in hyps)
