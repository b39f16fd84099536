"""Lines out of an engine: a line's n-best `Translation`, what a blank line gives, and the rules both
engines apply to the lines they are given (sources clipped to the positions, target prefixes cut to
leave room for an <eos>). Free of torch: a command that decodes with CTranslate2 never loads it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seq2seq.data.tokenizer import Tokenizer

log = logging.getLogger(__name__)


# What a score field says of a pair with a blank side (a blank source line, whose translation is
# empty, or a blank hypothesis): it has no score, in every verb (`s2s score` too, `scoring`).
BLANK = "blank"


@dataclass
class Translation:
    """The n-best translations of one input line, best first (empty for an empty line), each with
    its score: None for a blank one, which has none (`BLANK`)."""

    texts: list[str]
    scores: list[float | None]

    @classmethod
    def scored(cls, texts: list[str], scores: Sequence[float]) -> Translation:
        """Hypotheses and the scores their search gave them, but none for a blank hypothesis."""
        return cls(texts, [s if t.strip() else None for t, s in zip(texts, scores, strict=True)])


def blank_translations(count: int, nbest: int) -> list[Translation]:
    """What `count` empty lines translate to: `nbest` empty hypotheses each, without scores."""
    return [Translation([""] * nbest, [None] * nbest) for _ in range(count)]


def file_stamps(paths: Sequence[Path]) -> list[str]:
    """Each file's resolved path, size and modification time: a file replaced since counts as another."""
    stamps = []
    for path in paths:
        stat = path.stat()
        stamps.append(f"{path.resolve()} ({stat.st_size} bytes, modified {stat.st_mtime_ns})")
    return stamps


def clip_sources(
    sources: list[list], limit: int, line_numbers: Sequence[int], doing: str = "translating"
) -> None:
    """Cut, in place, each sequence longer than `limit` tokens, warning with its input line number
    and what is `doing` with its first `limit` tokens."""
    for source, line in zip(sources, line_numbers, strict=True):
        if len(source) > limit:
            log.warning("line %d has %d tokens; %s only the first %d", line, len(source), doing, limit)
            del source[limit:]


def target_prefixes(tokenizer: Tokenizer, texts: Sequence[str], limit: int) -> list[list[int]]:
    """Each text's target ids (none for a blank one), cut to leave room for an <eos> within `limit`
    output tokens: what `Translator.translate` forces each output to start with."""
    prefixes = tokenizer.encode([text if text.strip() else "" for text in texts])
    for prefix in prefixes:
        del prefix[limit - 1 :]
    return prefixes
