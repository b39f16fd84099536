"""A parsed line's tags put back around the words of its translation.

A placement rule says where each tag goes among the target words; `place` then makes the spans
nest and writes the line. Word boundary i of m source words has the relative position
round(i * n / m) among n target words (halves round up).

- `by_alignment`: an element wraps the target words from the first to the last one aligned to any
  word it wrapped: one span, whatever the order of those words. An element none of whose words is
  aligned wraps no word (a guessed word would carry the wrong formatting) and stands at the
  relative position of its start. A standalone tag, or an element that wrapped no word, stands
  before the first target word aligned to the word it stood before; at the end if it stood at the
  end; at the relative position if that word is not aligned.
- `by_position`: the baseline; both ends of every tag at their relative positions, no alignment.

Nesting repair, outermost tags first: a span is clamped into its parent's; siblings take words in
source order (a later sibling keeps the longest run of its words no earlier sibling took, or no
word); a tag left with no word that falls inside a sibling's words moves to just after them.

Output: the target's words (`str.split`) joined by single spaces, text escaped (`&amp;` `&lt;`
`&gt;`), tags verbatim. At one word boundary, siblings without words come before the sibling
whose words start there, and otherwise keep their source order; the one space between two words
goes before the first tag there that is not a close tag (after them all if all are): close tags
cling to the word before, other tags to the word after. The output parses with the source's
dialect into the target's words and the source's raw tags, each as often and at its repaired
span. Placed with the identity alignment on its own text, a line comes back as it was but for
that whitespace (no leading, trailing or repeated spaces, a no-break space turned into a space),
tags inside a word moved to its boundary, and entities other than those three written as
characters. A caller may write the words otherwise (`escape`: Markdown's backslashes, or none for
plain text) and give the whitespace of some boundaries (`spaces`: a sentence's original spacing);
a standalone tag that stands as a word (`Tag.word`: code kept untranslated) gets a space on each
side that has a word, but next to a word of punctuation that clings to it (`(`, `,`, `:`).
"""

from __future__ import annotations

import bisect
import html
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Protocol

from seq2seq.markup.free_runs import FreeRuns
from seq2seq.markup.marked import MarkedLine, MarkupError, Tag

Span = tuple[int, int]  # target words [start, end)
Alignment = Sequence[tuple[int, int]]  # (source word, target word) pairs, from 0
Escape = Callable[[str], str]  # a target word as the output's text
SINGLE_SPACES: Mapping[int, str] = MappingProxyType({})


def escape_html(word: str) -> str:
    """A word as html or xml text: `&amp;` `&lt;` `&gt;`."""
    return html.escape(word, quote=False)


class PlacementRule(Protocol):
    """Where each tag of `source` goes among `n` target words: one span per tag, before repair."""

    def __call__(self, source: MarkedLine, n: int, alignment: Alignment) -> list[Span]: ...


def relative(i: int, m: int, n: int) -> int:
    """Word boundary `i` of `m` words moved to the same relative place among `n` words."""
    return (2 * i * n + m) // (2 * m) if m else 0


def by_alignment(source: MarkedLine, n: int, alignment: Alignment) -> list[Span]:
    """Each element around the target words aligned to its words; standalone tags before theirs."""
    m = len(source.words)
    # each source word's first and last aligned target word; n and -1 for an unaligned word
    first, last = [n] * m, [-1] * m
    for i, j in alignment:
        first[i], last[i] = min(first[i], j), max(last[i], j)
    spans = []
    for tag in source.tags:
        if tag.start < tag.end and (low := min(first[tag.start : tag.end])) < n:
            spans.append((low, max(last[tag.start : tag.end]) + 1))
            continue
        before = first[tag.start] if tag.start == tag.end and tag.start < m else n
        at = before if before < n else relative(tag.start, m, n)
        spans.append((at, at))
    return spans


def by_position(source: MarkedLine, n: int, alignment: Alignment) -> list[Span]:
    """Each tag's ends at their relative positions; the alignment is not used (the baseline)."""
    m = len(source.words)
    return [(relative(tag.start, m, n), relative(tag.end, m, n)) for tag in source.tags]


def place(
    source: MarkedLine,
    target: str,
    alignment: Alignment,
    rule: PlacementRule = by_alignment,
    escape: Escape = escape_html,
    spaces: Mapping[int, str] = SINGLE_SPACES,
) -> str:
    """`target` (plain text) as markup, with every tag of `source` where `rule` puts it, nested; its
    words written by `escape`, the whitespace before target word j `spaces[j]` (default one space)."""
    words = target.split()
    m, n = len(source.words), len(words)
    for i, j in alignment:
        if not (0 <= i < m and 0 <= j < n):
            raise MarkupError(
                f"alignment pair {i}-{j} is outside the line: the source has {m} words and the "
                f"target {n}, counted from 0"
            )
    spans = nest(source.tags, rule(source, n, alignment), n)
    return write(source.tags, spans, words, escape, spaces)


def nest(tags: Sequence[Tag], spans: Sequence[Span], n: int) -> list[Span]:
    """`spans` (one per tag, ends in 0..n) repaired so that they nest as the tags do."""
    children: dict[int | None, list[int]] = {}
    for k, tag in enumerate(tags):
        children.setdefault(tag.parent, []).append(k)
    fixed: dict[int | None, Span] = {None: (0, n)}
    # a parent comes before its children in `tags`, so its span is fixed before theirs
    for parent in [None, *range(len(tags))]:
        if parent in children:
            fixed.update(_settle(children[parent], spans, fixed[parent]))
    return [fixed[k] for k in range(len(tags))]


def _settle(siblings: list[int], spans: Sequence[Span], within: Span) -> dict[int | None, Span]:
    """The spans of one parent's children (in source order), inside the parent's and disjoint."""
    low, high = within
    clamped = {k: (min(max(spans[k][0], low), high), min(max(spans[k][1], low), high)) for k in siblings}
    free = FreeRuns(low, high)
    settled: dict[int | None, Span] = {}
    for k in siblings:
        start, end = free.longest(*clamped[k])
        if start < end:
            free.take(start, end)
            settled[k] = (start, end)
    taken = sorted(settled.values())  # disjoint
    for k in siblings:
        if k not in settled:
            at = clamped[k][0]
            # no word: never inside a sibling's words, which would cut that sibling in two
            inside = bisect.bisect_left(taken, (at, at)) - 1
            if inside >= 0 and taken[inside][0] < at < taken[inside][1]:
                at = taken[inside][1]
            settled[k] = (at, at)
    return settled


def write(
    tags: Sequence[Tag],
    spans: Sequence[Span],
    words: Sequence[str],
    escape: Escape = escape_html,
    spaces: Mapping[int, str] = SINGLE_SPACES,
) -> str:
    """The words with each tag at its nested span: text escaped, tags verbatim, single spaces (or
    `spaces[j]` before word j)."""
    children: dict[int | None, list[int]] = {}
    for k, tag in enumerate(tags):
        children.setdefault(tag.parent, []).append(k)
    for siblings in children.values():
        # tags with no word at a boundary come before the one that starts there, else source order
        siblings.sort(key=lambda k: (spans[k][0], spans[k][0] < spans[k][1], k))
    at_boundary: list[list[tuple[str, Tag | None]]] = [[] for _ in range(len(words) + 1)]
    todo = [(k, False) for k in reversed(children.get(None, []))]
    while todo:
        k, closing = todo.pop()
        tag, (start, end) = tags[k], spans[k]
        if closing:
            at_boundary[end].append((tag.closing or "", None))
            continue
        at_boundary[start].append((tag.opening, tag))
        if tag.closing is not None:
            todo.append((k, True))
            todo.extend((child, False) for child in reversed(children.get(k, [])))
    return _joined(words, at_boundary, escape, spaces)


def _joined(
    words: Sequence[str],
    at_boundary: list[list[tuple[str, Tag | None]]],
    escape: Escape,
    spaces: Mapping[int, str],
) -> str:
    """The line: each boundary's tags (None: a close tag), the space between two words before the
    first tag there that is not a close tag, and a space after a tag that stands as a word (after
    the close tags that cling to it) but next to a word of punctuation that clings to it: `(`, `,`."""
    out: list[str] = []
    n = len(words)
    for boundary, here in enumerate(at_boundary):
        pieces = [raw for raw, _ in here]
        spaced = [i for i, (_, tag) in enumerate(here) if tag is not None and tag.word]
        if spaced and boundary < n and not _clings(words[boundary], _CLOSING):
            after = spaced[-1] + 1
            while after < len(here) and here[after][1] is None:
                after += 1
            pieces.insert(after, " ")
        first = next((i for i, (_, tag) in enumerate(here) if tag is not None), len(here))
        opens_on_word = first in spaced and _clings(words[boundary - 1], _OPENING) if boundary else False
        if (0 < boundary < n or (spaced and boundary == n > 0)) and not opens_on_word:
            pieces.insert(first, spaces.get(boundary, " "))
        out += pieces
        out += [escape(words[boundary])] if boundary < n else []
    return "".join(out)


_OPENING = frozenset("([{\"'„“‘«¿¡")  # a word of these clings to what follows it
_CLOSING = frozenset(".,;:!?)]}\"'“”’»…%")  # and of these to what comes before


def _clings(word: str, marks: frozenset[str]) -> bool:
    return all(c in marks for c in word)
