"""A line of text with its inline tags: what a model translates, and where each tag stood among its
words. `LineReader` builds one from pieces fed in order (text, tags, breaks between words), for a
line of markup (`seq2seq.markup.parse`) or a block of a document (`seq2seq.markup.document`).

Words are the `str.split` tokens of the decoded text; the model reads them joined by single spaces.
An element wraps the words [start, end) between its open and its close tag; a standalone tag stands
before word `start`. A tag that touches a word on one side only belongs to the word boundary on its
other side; a tag inside a word takes the whole word. A tag that separates words (`<br>`, a block's
tag, a span kept untranslated) ends the word before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from seq2seq.errors import Seq2SeqError


class MarkupError(Seq2SeqError):
    """A line's markup is malformed, or an alignment does not fit the line it belongs to."""


@dataclass(frozen=True)
class Tag:
    """An element around words [start, end), or a standalone tag (no `closing`) before word `start`."""

    opening: str  # the open tag, or the standalone tag, byte for byte
    closing: str | None  # the close tag byte for byte; None for a standalone tag
    start: int
    end: int  # == start for a standalone tag
    parent: int | None  # index in `MarkedLine.tags` of the element around this one; None: the line
    word: bool = False  # a standalone tag that stands as a word: text kept untranslated, spaced apart


@dataclass(frozen=True)
class MarkedLine:
    """A parsed line: the text the model reads, its words, and its tags in the order they open."""

    text: str
    words: tuple[str, ...]
    tags: tuple[Tag, ...]  # a parent comes before its children


@dataclass
class _Draft:
    """A tag while its line is read: its start may wait on the next character, its close on a tag."""

    opening: str
    name: str  # as written; "" for a standalone tag
    column: int
    parent: int | None
    standalone: bool
    word: bool = False
    closing: str | None = None
    start: int = 0
    end: int = 0


_RUNS = re.compile(r"\s+|\S+")


class LineReader:
    """The plain text and the tags of one line, fed piece by piece in line order; `spaces` keeps the
    whitespace as written between each two words (" " where only a tag parted them)."""

    def __init__(self, fold_case: bool = False) -> None:
        self.fold_case = fold_case  # tag names match in any case
        self.pieces: list[str] = []
        self.words = 0  # words begun so far
        self.in_word = False  # the text so far ends inside a word
        self.drafts: list[_Draft] = []
        self.open_elements: list[int] = []  # indices in drafts, innermost last
        self.waiting: list[int] = []  # tags inside or after a word: the next character says which
        self.spaces: list[str] = []  # between word i and word i + 1
        self.gap = ""  # the whitespace since the last word

    def text(self, chunk: str) -> None:
        """Add decoded text; it settles where the tags just before it stand."""
        if not chunk:
            return
        inside = self.in_word and not chunk[0].isspace()
        self._settle(self.words - 1 if inside else self.words)
        for run in _RUNS.finditer(chunk):
            if run.group()[0].isspace():
                self.gap += run.group()
            elif run.start() > 0 or not inside:  # a word begins
                if self.words:
                    self.spaces.append(self.gap or " ")
                self.gap = ""
                self.words += 1
        self.in_word = not chunk[-1].isspace()
        self.pieces.append(chunk)

    def space(self, raw: str) -> None:
        """Whitespace as written that is not text: a line break with what marks the lines of its
        container (a Markdown block quote's `> `); it parts words like a space."""
        self.separate()
        self.gap += raw

    def separate(self) -> None:
        """End the word being read: what follows starts another."""
        if self.in_word:
            self._settle(self.words)
            self.pieces.append(" ")
            self.in_word = False

    def open(self, raw: str, name: str, column: int) -> None:
        """An element's open tag."""
        self.open_elements.append(self._add(_Draft(raw, name, column, None, False)))

    def standalone(self, raw: str, column: int, word: bool = False) -> None:
        """A tag that has no close tag; a `word` stands apart from the words on both sides."""
        if word:
            self.separate()
        self._add(_Draft(raw, "", column, None, True, word))
        if word:
            self.separate()

    def close(self, raw: str, name: str, column: int) -> None:
        """An element's close tag: it must close the innermost open element."""
        if all(self._fold(self.drafts[k].name) != self._fold(name) for k in self.open_elements):
            raise MarkupError(f"column {column + 1}: {raw} closes no open element: remove it")
        inner = self.drafts[self.open_elements[-1]]
        if self._fold(inner.name) != self._fold(name):
            raise MarkupError(
                f"column {column + 1}: {raw} comes while {inner.opening} (column {inner.column + 1}) "
                f"inside its element is still open: add </{inner.name}> before it"
            )
        self.open_elements.pop()
        inner.closing, inner.end = raw, self.words

    def finish(self) -> MarkedLine:
        """The parsed line; MarkupError if an element is still open."""
        if self.open_elements:
            left = self.drafts[self.open_elements[-1]]
            raise MarkupError(
                f"column {left.column + 1}: {left.opening} is never closed: "
                f"add </{left.name}> after the words it wraps"
            )
        self._settle(self.words)
        words = tuple("".join(self.pieces).split())
        tags = (Tag(d.opening, d.closing, d.start, d.end, d.parent, d.word) for d in self.drafts)
        return MarkedLine(" ".join(words), words, tuple(tags))

    def _add(self, draft: _Draft) -> int:
        draft.parent = self.open_elements[-1] if self.open_elements else None
        self.drafts.append(draft)
        if self.in_word:
            # after a word, or inside it: only the next character tells
            self.waiting.append(len(self.drafts) - 1)
        else:
            draft.start = draft.end = self.words
        return len(self.drafts) - 1

    def _settle(self, word: int) -> None:
        """The waiting tags stand before `word`."""
        for k in self.waiting:
            draft = self.drafts[k]
            draft.start = word
            if draft.standalone:
                draft.end = word
        self.waiting.clear()

    def _fold(self, name: str) -> str:
        return name.lower() if self.fold_case else name
