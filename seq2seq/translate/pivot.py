"""Pivoting: a multilingual run translates a direction it never trained through a third language
(`s2s translate --to de --pivot en`: fr -> en, then en -> de), where zero-shot decoding is weak.

Both legs search with the same settings. The first keeps its best hypothesis only (what the second
reads); n-best lists, scores and target prefixes are the second leg's. A line the first leg leaves
empty stays empty. A pure wrapper: each leg is one request to the same engine, which neither changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from seq2seq.errors import Seq2SeqError
from seq2seq.translate.direction import Direction
from seq2seq.translate.engine import Engine
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request


class Pivoted:
    """ENGINE's requests into their language reached through the language `through`."""

    def __init__(self, engine: Engine, direction: Direction) -> None:
        """`direction`: its pivot, and the target language requests will ask for (checked here)."""
        self.engine = engine
        self.through = engine.source_tokens.language(direction.pivot, "--pivot")
        if self.through == engine.source_tokens.language(direction.to):
            raise Seq2SeqError(f"--pivot {direction.pivot} is the target language itself: leave --pivot out")

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` into the request's language per line, in order (`LineTranslator`)."""
        search = dataclasses.replace(request.search, nbest=1)
        into = request.direction.into(self.through)
        first = request.replace(search=search, direction=into, scores=False, keep_unk=False)
        middle = self.engine.translate(lines, first, first_line)
        texts = [t.texts[0] for t in middle]
        return self.engine.translate(texts, request, first_line, prefixes)
