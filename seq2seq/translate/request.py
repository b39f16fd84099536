"""What one call asks of an engine besides its lines: how to search, into which language, with which
tag, and what the output holds. Passed with every call, so a loaded engine is never changed by one
(`seq2seq.translate.engine`): two requests of different languages can be decoded by one engine at
once, and a pivot is two requests (`seq2seq.translate.pivot`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from seq2seq.decoding.settings import SearchSettings
from seq2seq.translate.direction import STRAIGHT, Direction
from seq2seq.translate.options import DecodeOptions


@dataclass(frozen=True)
class Request:
    """How to translate a call's lines. Hashable: a server groups the requests that share one."""

    search: SearchSettings
    max_tokens: int  # source tokens per batch (before the beam's expansion)
    direction: Direction = STRAIGHT  # its target language and tag; never a pivot (`Pivoted` makes two)
    keep_unk: bool = False  # show <unk> pieces as ` ⁇ ` instead of dropping them
    scores: bool = True  # each hypothesis is shown with its score (always with an n-best list): else
    # CTranslate2's greedy search skips computing them

    @classmethod
    def of(
        cls,
        options: DecodeOptions,
        direction: Direction = STRAIGHT,
        keep_unk: bool = False,
        scores: bool = True,
    ) -> Request:
        """The request of a command's decode `options`, into `direction`, its output as asked."""
        return cls(options.search, options.max_tokens, direction, keep_unk, scores)

    def replace(self, **fields: object) -> Request:
        return dataclasses.replace(self, **fields)  # type: ignore[arg-type]
