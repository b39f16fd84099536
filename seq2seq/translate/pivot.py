"""Pivoting: a multilingual run translates a direction it never trained through a third language
(`s2s translate --to de --pivot en`: fr -> en, then en -> de), where zero-shot decoding is weak.

Both legs search with the same settings. The first keeps its best hypothesis only (what the second
reads); n-best lists, scores and target prefixes are the second leg's. A line the first leg leaves
empty stays empty.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

from seq2seq.decoding.search import SearchSettings
from seq2seq.errors import Seq2SeqError
from seq2seq.translate.source_tokens import SourceTokens
from seq2seq.translate.streams import LineTranslator
from seq2seq.translate.translator import Translation


class Pivotable(LineTranslator, Protocol):
    """What pivoting needs of an engine (`Translator` or the CTranslate2 one): a `LineTranslator`
    whose source tokens (the target language) can be chosen."""

    source_tokens: SourceTokens

    def use_source_tokens(self, to: str = "", tag: str = "") -> None: ...


class Pivoted:
    """TRANSLATOR's target language (`use_source_tokens`) reached through the language `through`."""

    def __init__(self, translator: Pivotable, through: str) -> None:
        self.translator = translator
        self.to, self.tag = translator.source_tokens.to, translator.source_tokens.tag
        self.through = translator.source_tokens.language(through, "--pivot")
        if self.through == self.to:
            raise Seq2SeqError(f"--pivot {through} is the target language itself: leave --pivot out")

    def translate(
        self,
        lines: Sequence[str],
        settings: SearchSettings,
        max_tokens: int,
        first_line: int = 1,
        keep_unk: bool = False,
        scores: bool = True,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` into the target language per line, in order, as `Translator.translate`."""
        self.translator.use_source_tokens(self.through, self.tag)
        try:
            middle = self.translator.translate(
                lines, dataclasses.replace(settings, nbest=1), max_tokens, first_line, scores=False
            )
        finally:
            self.translator.use_source_tokens(self.to, self.tag)
        texts = [t.texts[0] for t in middle]
        return self.translator.translate(texts, settings, max_tokens, first_line, keep_unk, scores, prefixes)
