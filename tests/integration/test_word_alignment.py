"""eflomal itself (a process of its own) aligns a toy language whose true alignment is known."""

from __future__ import annotations

import random

import pytest

from seq2seq.align.aer import alignment_scores
from seq2seq.align.eflomal_aligner import align_words

pytest.importorskip("eflomal", reason="eflomal is the optional extra s2s[align] (in .[dev]) and is missing")

VOCABULARY = ["ka", "lomi", "sev", "tura", "pin", "davo", "rek", "moli", "sun", "ebo", "fir", "gala"]


def toy_corpus(lines: int, seed: int) -> tuple[list[str], list[str], list[list[tuple[int, int]]]]:
    """Target words are the source words spelled backwards, each neighbouring two swapped in order."""
    rng = random.Random(seed)
    src, tgt, truth = [], [], []
    for _ in range(lines):
        words = [rng.choice(VOCABULARY) for _ in range(rng.randint(3, 7))]
        order = list(range(len(words)))
        for n in range(0, len(order) - 1, 2):
            order[n], order[n + 1] = order[n + 1], order[n]  # target word j is source word order[j]
        src.append(" ".join(words))
        tgt.append(" ".join(words[i][::-1] for i in order))
        truth.append(sorted((i, j) for j, i in enumerate(order)))
    return src, tgt, truth


def test_eflomal_recovers_a_toy_alignment_and_skips_empty_lines():
    src, tgt, truth = toy_corpus(50, seed=0)
    src, tgt, truth = [*src, "", "ka"], [*tgt, "ak", ""], [*truth, [], []]
    predicted = align_words(src, tgt, samplers=1)
    assert len(predicted) == len(src) and predicted[-2:] == [[], []]
    scores = alignment_scores(predicted, truth)
    assert scores.aer < 0.3, scores
