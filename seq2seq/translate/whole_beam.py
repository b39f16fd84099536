"""What every reranking of a beam shares (`--mbr`, `--rerank`): each line's beam searched whole
(n-best = beam, with the search's scores), then put in the reranker's order, its first n-best kept."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from seq2seq.translate.engine import LineTranslator
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request


class WholeBeam:
    """A `LineTranslator` over LINES whose subclass orders each line's whole beam (`reranked`)."""

    def __init__(self, lines: LineTranslator) -> None:
        self.lines = lines

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` per line: its beam reranked, the first n-best kept."""
        search = request.search
        whole = request.replace(search=dataclasses.replace(search, nbest=search.beam), scores=True)
        found = self.lines.translate(lines, whole, first_line, prefixes)
        return self.reranked(lines, found, search.nbest)

    def reranked(self, lines: Sequence[str], beams: list[Translation], nbest: int) -> list[Translation]:
        """Each line's beam (`beams`, with the search's scores) in this reranker's order, `nbest` kept."""
        raise NotImplementedError


def best_first(translation: Translation, keys: Sequence[float], nbest: int) -> Translation:
    """`translation`'s hypotheses by `keys`, highest first (ties in the search's order), each with the
    score the search gave it; the first `nbest` kept."""
    order = sorted(range(len(translation.texts)), key=lambda i: -keys[i])[:nbest]
    return Translation([translation.texts[i] for i in order], [translation.scores[i] for i in order])
