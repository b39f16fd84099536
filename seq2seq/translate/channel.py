"""The noisy channel: of a line's beam, the hypothesis a reverse model also finds likely
(`s2s translate --rerank REVERSE_RUN`), rather than the one the forward search scores highest.

The beam is searched whole (n-best = beam); the reverse run (trained from the target language to the
source language) then scores the line given each hypothesis, teacher-forced (`s2s score`'s
`score_pairs`), and each hypothesis is ranked by

    the search's score + weight x the reverse run's mean log-probability per source token (<eos> included)

after Yee et al. (2019), "Simple and effective noisy channel modeling for neural machine translation",
without their language model. The first `nbest` are kept, each with the score the search gave it. A
blank hypothesis, which the reverse run cannot read, ranks last. A wrapper, as MBR and a pivot are:
the engine is not changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from seq2seq.translate.engine import LineTranslator
from seq2seq.translate.lines import Translation
from seq2seq.translate.scoring import PairScore, score_pairs
from seq2seq.translate.translator import Translator
from seq2seq.translate.whole_beam import WholeBeam, best_first


class NoisyChannel(WholeBeam):
    """LINES's translations chosen from the beam with a reverse run's help (`LineTranslator`)."""

    def __init__(self, lines: LineTranslator, reverse: Translator, weight: float) -> None:
        super().__init__(lines)
        self.reverse, self.weight = reverse, weight

    @classmethod
    def load(cls, lines: LineTranslator, reverse_dir: str | Path, weight: float) -> NoisyChannel:
        """The reverse run's best checkpoint, read by s2s's decoder where it runs by default."""
        return cls(lines, Translator.load(reverse_dir), weight)

    def reranked(self, lines: Sequence[str], beams: list[Translation], nbest: int) -> list[Translation]:
        hypotheses = [text for t in beams for text in t.texts]
        sources = [line for line, t in zip(lines, beams, strict=True) for _ in t.texts]
        budget = self.reverse.config.decode.max_tokens
        reverse = iter(score_pairs(self.reverse, hypotheses, sources, budget))
        return [self.ranked(t, [next(reverse) for _ in t.texts], nbest) for t in beams]

    def ranked(self, translation: Translation, reverse: Sequence[PairScore], nbest: int) -> Translation:
        """`translation`'s hypotheses by their combined scores, the first `nbest` kept."""
        combined = [
            -math.inf if score is None or pair.missing else score - self.weight * pair.cross_entropy
            for score, pair in zip(translation.scores, reverse, strict=True)
        ]
        return best_first(translation, combined, nbest)
