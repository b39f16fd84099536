"""Continuous batching (`RunningSearch`): a sentence that joins a running batch at any step gets the
hypotheses the offline search gives it alone, settles within its own steps, and the cache keeps only
the positions the running sentences need."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch

from seq2seq.decoding.prefix import Forced
from seq2seq.decoding.running_search import RunningSearch, Sentence
from seq2seq.decoding.search import search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.models.ensemble import Ensemble
from seq2seq.special import EOS
from tests.conftest import make_model, random_ids

CPU = torch.device("cpu")


class EosBiased:
    """A real model whose <eos> logit rises with each row's own position, so hypotheses end early and
    unevenly (as `test_search.EosBiased`, with rows at different steps: `DecoderCache.positions`)."""

    def __init__(self, model, slope: float = 0.6) -> None:
        self.model, self.slope, self.max_positions = model, slope, model.max_positions

    def encode(self, src):
        return self.model.encode(src)

    def new_cache(self):
        return self.model.new_cache()

    def fill_memory(self, cache, memory) -> None:
        self.model.fill_memory(cache, memory)

    def decode(self, tgt, memory, cache=None):
        logits = self.model.decode(tgt, memory, cache).clone()  # (N, T, V)
        if cache is None:
            positions = torch.arange(tgt.size(1))[None, :]  # (1, T)
        else:  # the cache now holds the decoded position: the next is one further
            positions = torch.as_tensor(cache.positions()).reshape(-1, 1) - 1  # (N or 1, 1)
        logits[..., EOS] += self.slope * positions * (1 + tgt % 3)
        return logits


def sentences(count: int, seed: int, prefixes: bool) -> list[Sentence]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        source = random_ids(1, rng.randint(2, 12), seed=seed * 1000 + i)[0].tolist() + [EOS]
        prefix = [rng.randint(4, 22) for _ in range(rng.randint(0, 3))] if prefixes else []
        out.append(Sentence(source, prefix, i))
    return out


def run_staggered(model, settings: SearchSettings, todo: list[Sentence], seed: int, watch=None) -> dict:
    """Every sentence through one RunningSearch, 0-3 joining before each step: {key: hypotheses}."""
    rng = random.Random(seed)
    running = RunningSearch(model, settings, CPU)
    waiting, found = list(todo), {}
    while waiting or len(running):
        joining = waiting[: rng.randint(0, 3)] or ([] if len(running) else waiting[:1])
        waiting = waiting[len(joining) :]
        if joining:
            running.join(joining)
        settled = running.step()
        if watch is not None:
            watch(running, joining, settled)
        found.update(settled)
    return found


def alone(model, sentence: Sentence, settings: SearchSettings):
    prefix = Forced.of([list(sentence.prefix)], CPU)
    return search(model, torch.tensor([list(sentence.source)]), settings, prefix)[0]


SETTINGS = {
    "greedy": SearchSettings(beam=1, nbest=1, max_len_a=1.0, max_len_b=4),
    "beam 4, nbest 2": SearchSettings(beam=4, nbest=2, max_len_a=1.0, max_len_b=4),
    "beam 3, gnmt, min_len 2": SearchSettings(
        beam=3, length_norm="gnmt", min_len=2, max_len_a=1.0, max_len_b=4
    ),
    "beam 5, alpha 0": SearchSettings(beam=5, length_penalty=0.0, max_len_a=1.2, max_len_b=3),
    "beam 3, no repeated bigram": SearchSettings(beam=3, no_repeat_ngram=2, max_len_a=1.0, max_len_b=6),
    "beam 4, nbest 3, alpha 0.6": SearchSettings(
        beam=4, nbest=3, length_penalty=0.6, max_len_a=1.0, max_len_b=5
    ),
}


@pytest.mark.parametrize("prefixes", [False, True], ids=["", "prefixes"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_joining_a_running_batch_gives_what_the_sentence_gets_alone(name, prefixes):
    """On an under-trained model whose hypotheses end at uneven steps: the same tokens, scores within
    1e-4, whichever sentences shared the steps."""
    settings = SETTINGS[name]
    model = EosBiased(make_model(seed=3), slope=0.3)
    todo = sentences(24, seed=3, prefixes=prefixes)
    found = run_staggered(model, settings, todo, seed=7)
    assert sorted(found) == list(range(len(todo)))
    early = set()  # lengths of hypotheses that ended by choice, before their limit
    for sentence in todo:
        expected = alone(model, sentence, settings)
        assert [h.tokens for h in found[sentence.key]] == [h.tokens for h in expected]
        assert [h.score for h in found[sentence.key]] == pytest.approx([h.score for h in expected], abs=1e-4)
        limit = int(settings.max_len_a * len(sentence.source) + settings.max_len_b)
        early |= {len(h.tokens) for h in expected if len(h.tokens) < limit - 1}
    assert len(early) > 1, "hypotheses end early, at several lengths"


def test_an_ensemble_joins_as_one_model():
    ensemble = Ensemble([make_model(seed=1), make_model(seed=2)])
    settings = SETTINGS["beam 4, nbest 2"]
    todo = sentences(12, seed=3, prefixes=True)
    found = run_staggered(ensemble, settings, todo, seed=4)
    for sentence in todo:
        expected = alone(ensemble, sentence, settings)
        assert [h.tokens for h in found[sentence.key]] == [h.tokens for h in expected]
        assert [h.score for h in found[sentence.key]] == pytest.approx([h.score for h in expected], abs=1e-4)


@pytest.mark.parametrize("beam", [1, 4])
def test_a_sentence_settles_within_its_own_steps_and_the_cache_holds_only_running_positions(beam):
    """Joining never makes a sentence wait for the others: it settles within its length limit's steps
    of joining. The cache holds as many positions as the oldest running sentence has decoded."""
    settings = dataclasses.replace(SETTINGS["greedy"], beam=beam, nbest=1)
    model = EosBiased(make_model(seed=5), slope=0.2)
    todo = sentences(30, seed=6, prefixes=False)
    joined_at: dict[int, int] = {}
    step = 0

    def watch(running, joining, settled) -> None:
        nonlocal step
        step += 1
        for s in joining:
            joined_at[s.key] = step
        for key, _ in settled:
            limit = int(settings.max_len_a * len(todo[key].source) + settings.max_len_b)
            assert step - joined_at[key] < limit
        if len(running):
            assert running.cache.length == int(running.state.steps.max())

    run_staggered(model, settings, todo, seed=8, watch=watch)
    assert len(joined_at) == len(todo)


def test_sampling_is_not_a_running_search():
    with pytest.raises(ValueError, match="beam search or greedily"):
        RunningSearch(make_model(), SearchSettings(beam=1, sampling=True), CPU)
