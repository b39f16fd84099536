"""The Pharaoh alignment format: one line per sentence pair, `i-j` pairs separated by spaces.

`i` is a source word and `j` a target word, both 0-based; an empty line is a pair with no links.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from seq2seq.align import Pair
from seq2seq.errors import AlignmentError

# ASCII digits only: `\d` would also take other scripts' digits, which int() reads but no aligner writes
_PAIR = re.compile(r"([0-9]+)-([0-9]+)")


def parse_pharaoh(
    line: str, src_words: int | None = None, tgt_words: int | None = None, line_number: int = 1
) -> list[Pair]:
    """The sorted, distinct pairs of one Pharaoh line, each checked against the given word counts.

    A count of None leaves that side unchecked (a reference read without its text). A malformed
    pair or an index past its side's last word raises AlignmentError naming `line_number` and the pair.
    """
    pairs = set()
    for token in line.split():
        match = _PAIR.fullmatch(token)
        if match is None:
            raise AlignmentError(
                f"line {line_number}: the alignment pair {token!r} is not SOURCE-TARGET with two "
                "word numbers counted from 0, such as 0-2"
            )
        i, j = int(match[1]), int(match[2])
        for side, index, count in (("source", i, src_words), ("target", j, tgt_words)):
            if count is not None and index >= count:
                raise AlignmentError(
                    f"line {line_number}: the alignment pair {token!r} names {side} word {index}, but the "
                    f"{side} has {count} words (0 to {count - 1}); are the alignments and the text from "
                    "the same lines, in the same order?"
                )
        pairs.add((i, j))
    return sorted(pairs)


def parse_pharaoh_lines(
    lines: Sequence[str], word_counts: Sequence[tuple[int, int]] | None = None
) -> list[list[Pair]]:
    """Every line's pairs; `word_counts` (source words, target words), one per line, checks the indices."""
    if word_counts is not None and len(word_counts) != len(lines):
        raise AlignmentError(
            f"there are {len(lines)} alignment lines for {len(word_counts)} sentence pairs; "
            "each sentence pair needs one alignment line, an empty one if it has no links"
        )
    counts: Iterable[tuple[int | None, int | None]] = word_counts or [(None, None)] * len(lines)
    return [
        parse_pharaoh(line, src, tgt, number)
        for number, (line, (src, tgt)) in enumerate(zip(lines, counts, strict=True), 1)
    ]


def format_pharaoh(pairs: Iterable[Pair]) -> str:
    """One Pharaoh line: the distinct pairs sorted by source word, then target word; no newline."""
    return " ".join(f"{i}-{j}" for i, j in sorted(set(pairs)))
