"""Minimum Bayes risk: of a line's beam, the hypothesis that agrees most with the others
(`s2s translate --mbr chrf`), rather than the one the model scores highest.

A beam's hypotheses stand in for the model's distribution: each weighted by its probability (the
softmax of the scores the search gave them), each hypothesis's expected utility is its sentence-level
chrF (or BLEU) against every hypothesis of the beam, itself included, by those weights. The beam is
searched whole (n-best = beam), then ranked by expected utility, the first `nbest` kept, each with
the score the search gave it. A pure wrapper, as a pivot is: the engine is not changed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from seq2seq.errors import Seq2SeqError
from seq2seq.translate.engine import LineTranslator
from seq2seq.translate.lines import Translation
from seq2seq.translate.options import MBR_UTILITIES
from seq2seq.translate.whole_beam import WholeBeam, best_first

Utility = Callable[[str, str], float]  # (hypothesis, pseudo-reference) -> a score, higher is better


def utility(name: str) -> Utility:
    """The sentence-level metric `--mbr NAME` ranks by; an unknown name is an error."""
    from sacrebleu.metrics import BLEU, CHRF  # here: translating without --mbr never loads sacrebleu

    if name == "chrf":
        chrf = CHRF()
        return lambda hypothesis, reference: chrf.sentence_score(hypothesis, [reference]).score
    if name == "bleu":
        bleu = BLEU(effective_order=True)
        return lambda hypothesis, reference: bleu.sentence_score(hypothesis, [reference]).score
    raise Seq2SeqError(f"--mbr {name!r}: choose one of {', '.join(MBR_UTILITIES)}")


def expected_utilities(texts: Sequence[str], scores: Sequence[float | None], score: Utility) -> list[float]:
    """Each hypothesis's utility against all of them, weighted by their probabilities (softmax of the
    scores; a blank hypothesis, which has none, weighs nothing)."""
    known = [s for s in scores if s is not None]
    top = max(known, default=0.0)
    weights = [math.exp(s - top) if s is not None else 0.0 for s in scores]
    total = sum(weights) or 1.0
    return [
        sum(w / total * score(hypothesis, other) for other, w in zip(texts, weights, strict=True) if w)
        for hypothesis in texts
    ]


class MinimumBayesRisk(WholeBeam):
    """LINES's translations chosen from the beam by expected utility (`LineTranslator`)."""

    def __init__(self, lines: LineTranslator, name: str) -> None:
        super().__init__(lines)
        self.score = utility(name)

    def reranked(self, lines: Sequence[str], beams: list[Translation], nbest: int) -> list[Translation]:
        return [self.ranked(t, nbest) for t in beams]

    def ranked(self, translation: Translation, nbest: int) -> Translation:
        texts, given = translation.texts, translation.scores
        if not texts or not any(t.strip() for t in texts):  # an empty line, or nothing but blanks
            return Translation(texts[:nbest], given[:nbest])
        return best_first(translation, expected_utilities(texts, given, self.score), nbest)
