"""Reranking by a second run (`s2s translate --rerank RUN`): of a line's beam, the hypothesis the
second run also finds likely, rather than the one the forward search scores highest.

The beam is searched whole (n-best = beam); the second run then scores each hypothesis teacher-forced
(`s2s score`'s `score_pairs`), and each hypothesis is ranked by

    the search's score + weight x the second run's mean log-probability per token (<eos> included)

summed over the second runs where several are given, each at its own weight.

What the second run scores depends on how it was trained, read once from its config:

- a reverse run (trained from the target language to the source language) scores the line given each
  hypothesis: the noisy channel, after Yee et al. (2019), "Simple and effective noisy channel modeling
  for neural machine translation", without their language model;
- a right-to-left run (`model.right_to_left`, trained in the forward direction) scores each
  hypothesis given the line, written from its last piece to its first, so that it judges the end of
  a hypothesis with the whole of it in view (Liu et al. (2016), "Agreement on target-bidirectional
  neural machine translation"; Marian's and many WMT systems' right-to-left rescoring).

The first `nbest` are kept, each with the score the search gave it. A blank hypothesis, which the
second run cannot read, ranks last. A wrapper, as MBR and a pivot are: the engine is not changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seq2seq.translate.engine import LineTranslator
from seq2seq.translate.lines import Translation
from seq2seq.translate.scoring import PairScore, score_pairs
from seq2seq.translate.translator import Translator
from seq2seq.translate.whole_beam import WholeBeam, best_first


@dataclass(frozen=True)
class Judge:
    """One second run, loaded, and its weight; `same_way`: it scores (line, hypothesis), as a
    right-to-left run does, not (hypothesis, line), as a reverse run does."""

    run: Translator
    weight: float

    @property
    def same_way(self) -> bool:
        return self.run.config.model.right_to_left

    def scores(self, sources: list[str], hypotheses: list[str]) -> list[PairScore]:
        pairs = (sources, hypotheses) if self.same_way else (hypotheses, sources)
        return score_pairs(self.run, *pairs, self.run.config.decode.max_tokens)


class Rescored(WholeBeam):
    """LINES's translations chosen from the beam with second runs' help (`LineTranslator`)."""

    def __init__(self, lines: LineTranslator, judges: Sequence[Judge]) -> None:
        super().__init__(lines)
        self.judges = tuple(judges)

    @classmethod
    def load(cls, lines: LineTranslator, runs: Sequence[str | Path], weights: Sequence[float]) -> Rescored:
        """Each second run's best checkpoint, read by s2s's decoder where it runs by default."""
        judges = [Judge(Translator.load(run), weight) for run, weight in zip(runs, weights, strict=True)]
        return cls(lines, judges)

    def reranked(self, lines: Sequence[str], beams: list[Translation], nbest: int) -> list[Translation]:
        hypotheses = [text for t in beams for text in t.texts]
        sources = [line for line, t in zip(lines, beams, strict=True) for _ in t.texts]
        by_judge = [judge.scores(sources, hypotheses) for judge in self.judges]
        scored = iter(zip(*by_judge, strict=True))  # each hypothesis: its score by each judge
        return [self.ranked(t, [next(scored) for _ in t.texts], nbest) for t in beams]

    def ranked(
        self, translation: Translation, second: Sequence[Sequence[PairScore]], nbest: int
    ) -> Translation:
        """`translation`'s hypotheses by their combined scores, the first `nbest` kept."""
        combined = [
            self.combined(score, pairs) for score, pairs in zip(translation.scores, second, strict=True)
        ]
        return best_first(translation, combined, nbest)

    def combined(self, score: float | None, pairs: Sequence[PairScore]) -> float:
        """The search's score plus each judge's weighted score; -inf where one is missing."""
        if score is None or any(pair.missing for pair in pairs):
            return -math.inf
        return score - sum(
            judge.weight * pair.cross_entropy for judge, pair in zip(self.judges, pairs, strict=True)
        )
