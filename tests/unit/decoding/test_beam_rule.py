"""The beam rule (`Beams`) that the offline and the running search share: a sentence's step depends on
that sentence alone, not on which sentences share the batch nor at which steps they are, so a loop
that keeps one step for all (the offline search) and one that keeps each sentence's own (the running
search) give it the same hypotheses."""

from __future__ import annotations

import random

import pytest
import torch

from seq2seq.decoding.beam_rule import Beams, best_first
from seq2seq.decoding.settings import SearchSettings
from seq2seq.special import BOS, EOS, PAD

VOCAB = 12


def logits_of(sentence: int, t: int, k: int, at_limit: bool) -> torch.Tensor:
    """(K, V) a sentence's next-token logits at its step `t`, the same in any batch; <eos> grows
    likelier with `t`, so hypotheses end at several steps; only <eos> at the length limit."""
    g = torch.Generator().manual_seed(1000 * sentence + t)
    logits = 2 * torch.randn(k, VOCAB, generator=g)
    logits[:, [PAD, BOS]] = float("-inf")
    logits[:, EOS] += 0.4 * t
    if at_limit:
        logits[:, torch.arange(VOCAB) != EOS] = float("-inf")
    return logits


class Loop:
    """Sentences stepping under the rule as a search loop drives them: with `shared_step` as the
    offline search does (one step for all, an int), else each at its own as the running search."""

    def __init__(self, settings: SearchSettings, limits: dict[int, int], prefixes: dict[int, list[int]]):
        self.settings, self.limits, self.prefixes = settings, limits, prefixes
        self.ids: list[int] = []  # the sentence of each block
        self.steps: list[int] = []
        self.rows: list[list[int]] = []  # each row's tokens from its <bos>
        self.beams: Beams | None = None
        self.found: dict[int, list] = {}
        self.settled_after: dict[int, int] = {}  # the steps each sentence took

    def join(self, ids: list[int]) -> None:
        joining = Beams.start(torch.tensor([self.limits[i] for i in ids]), self.settings)
        self.beams = joining if self.beams is None else self.beams.join(joining)
        self.ids += ids
        self.steps += [0] * len(ids)
        self.rows += [[BOS] for _ in range(len(ids) * self.settings.beam)]

    def step(self, shared_step: bool) -> None:
        k, beams = self.settings.beam, self.beams
        assert beams is not None
        t = self.steps[0] if shared_step else torch.tensor(self.steps)
        at_limit = beams.at_limit(t)
        logits = torch.cat(
            [logits_of(i, s, k, bool(cut)) for i, s, cut in zip(self.ids, self.steps, at_limit, strict=True)]
        )
        forced = [(self.prefixes[i] + [PAD] * (s + 1))[s] for i, s in zip(self.ids, self.steps, strict=True)]
        width = max(len(r) for r in self.rows)
        history = torch.tensor([[PAD] * (width - len(r)) + r for r in self.rows])  # as the running search
        starts = [width - len(self.rows[b * k]) for b in range(len(self.ids))]
        step = beams.advance(logits, torch.tensor(forced), history, t, at_limit, self.settings, starts)
        tokens = step.tokens.view(-1).tolist()
        rows = [self.rows[p] + [tok] for p, tok in zip(step.parent.tolist(), tokens, strict=True)]
        for b in step.leaving.nonzero().squeeze(1).tolist():
            self.found[self.ids[b]] = best_first(beams.finished[b], self.settings.nbest)
            self.settled_after[self.ids[b]] = self.steps[b] + 1
        keep = (~step.leaving).nonzero().squeeze(1).tolist()
        self.beams = beams.select(torch.tensor(keep, dtype=torch.long))
        self.ids = [self.ids[b] for b in keep]
        self.steps = [self.steps[b] + 1 for b in keep]
        self.rows = [rows[b * k + j] for b in keep for j in range(k)]


SETTINGS = {
    "beam 3, nbest 2": SearchSettings(beam=3, nbest=2),
    "beam 4, nbest 3, alpha 0.6": SearchSettings(beam=4, nbest=3, length_penalty=0.6),
    "beam 3, gnmt 0.7": SearchSettings(beam=3, nbest=2, length_norm="gnmt", length_penalty=0.7),
    "beam 4, alpha 0": SearchSettings(beam=4, length_penalty=0.0),
    "beam 1": SearchSettings(beam=1),
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_a_sentence_steps_alike_in_one_batch_and_beside_sentences_at_other_steps(name):
    """It settles after as many of its own steps, with the same tokens and the same scores but for
    rounding (a normalizer from an int step or from a tensor of steps)."""
    settings = SETTINGS[name]
    rng = random.Random(5)
    sentences = list(range(16))
    limits = {i: rng.randint(3, 12) for i in sentences}
    prefixes = {i: [rng.randint(4, VOCAB - 1) for _ in range(rng.randint(0, 2))] for i in sentences}
    offline = Loop(settings, limits, prefixes)  # all at once, at one step
    offline.join(sentences)
    while offline.ids:
        offline.step(shared_step=True)
    running = Loop(settings, limits, prefixes)  # 0-3 sentences join before each step
    waiting = sentences
    while waiting or running.ids:
        joining = waiting[: rng.randint(0, 3)] or ([] if running.ids else waiting[:1])
        waiting = waiting[len(joining) :]
        if joining:
            running.join(joining)
        running.step(shared_step=False)
    assert running.settled_after == offline.settled_after
    for i in sentences:
        expected, found = offline.found[i], running.found[i]
        assert [h.tokens for h in found] == [h.tokens for h in expected]
        assert [h.score for h in found] == pytest.approx([h.score for h in expected], rel=1e-6)
    lengths = {len(h.tokens) for hyps in offline.found.values() for h in hyps}
    assert len(lengths) > 2, "hypotheses end at several steps"
    assert any(offline.settled_after[i] < limits[i] for i in sentences), "the rule settles some"
