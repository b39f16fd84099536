"""A document split into the blocks a model translates and everything else, kept as written.

A `Document` is its text cut into pieces: kept text (markup, code, whitespace between blocks) and
`Block`s (a paragraph, a heading, a list item, a table cell), each with its inline markup read into
a `MarkedLine`. Writing it back with each block replaced by its translation changes nothing else;
written back with every block as it was, it is the text it was read from, byte for byte.

html and xml documents are split on their tree (`seq2seq.markup.tree`) by a `Layout`: an element
that splits (html: a block element, or one that holds one; xml: any element of a parent that holds
no text of its own) keeps its tags in place and has its content laid out in turn; the runs of text
and inline elements between them are the blocks, less what holds no words at either end (spaces,
comments, an image, a `<br>`, a span kept untranslated: they stay where they are). An element that
is kept (`<script>`, `<pre>`, `<code>`, `translate="no"`, ...) is never translated: where it splits
it stays as it is; inside a block it is a standalone tag, kept byte for byte, that stands as a word
where it shows (`<code>`), or as an invisible tag (`<script>`). Plain text is split into paragraphs
at blank lines.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from seq2seq.markup.elements import BLOCK, KEPT
from seq2seq.markup.marked import LineReader, MarkedLine
from seq2seq.markup.place import Escape
from seq2seq.markup.tree import OTHER, TEXT, Node


@dataclass(frozen=True)
class Block:
    """A run of text to translate with its inline markup: a paragraph, a heading, a cell."""

    line: MarkedLine  # its words and tags
    raw: str  # as written: what a translation that changes no word leaves
    spaces: tuple[str, ...]  # the whitespace as written between word i and word i + 1
    offset: int  # where it starts in the document


@dataclass(frozen=True)
class Document:
    """A document's text in pieces: kept text and blocks, in order."""

    pieces: tuple[str | Block, ...]
    escape: Escape  # how a target word is written as the document's text

    @property
    def blocks(self) -> list[Block]:
        return [piece for piece in self.pieces if isinstance(piece, Block)]

    def written(self, texts: Sequence[str]) -> str:
        """The document with its blocks, in order, replaced by `texts`."""
        replaced = iter(texts)
        out = [piece if isinstance(piece, str) else next(replaced) for piece in self.pieces]
        assert next(replaced, None) is None, "more texts than blocks"
        return "".join(out)


def pieces_of(text: str, blocks: Sequence[Block]) -> tuple[str | Block, ...]:
    """`text` cut around `blocks` (in order, apart): the kept text between them, and each block."""
    out: list[str | Block] = []
    at = 0
    for block in blocks:
        out += [text[at : block.offset], block]
        at = block.offset + len(block.raw)
    return (*out, text[at:])


class Rules(Protocol):
    """How a markup language lays its elements out: what splits blocks, what is not translated."""

    def splits(self, node: Node, parent: Node) -> bool:
        """Whether element `node` stands between blocks rather than inside one."""

    def kept(self, node: Node) -> bool:
        """Whether element `node`'s content is never translated."""

    def shown(self, node: Node) -> bool:
        """Whether kept element `node`, inside a block, shows as a word (`<code>`, not `<script>`)."""

    def separates(self, node: Node) -> bool:
        """Whether element `node` parts the words on its two sides (`<br>`)."""


# an attribute (its local name: `its:translate` too) whose value declines translation
_DECLINING = {"translate": "no"}


def _declines(node: Node) -> bool:
    """`translate="no"` (or `its:translate="no"`), or the class that web translators leave alone."""
    named = ((name.rsplit(":", 1)[-1], value) for name, value in node.attributes.items())
    if any(name in _DECLINING and _DECLINING[name] == value for name, value in named):
        return True
    return "notranslate" in (node.attributes.get("class") or "").split()


class HtmlRules:
    """html's blocks: `elements.BLOCK`, and inline elements that hold one."""

    def __init__(self) -> None:
        self.holds_block: dict[int, bool] = {}

    def splits(self, node: Node, parent: Node) -> bool:
        if id(node) not in self.holds_block:
            self.holds_block[id(node)] = node.name in BLOCK or any(
                child.element and self.splits(child, node) for child in node.children
            )
        return self.holds_block[id(node)]

    def kept(self, node: Node) -> bool:
        return node.name in KEPT or _declines(node)

    def shown(self, node: Node) -> bool:
        return node.name not in ("script", "style", "template")

    def separates(self, node: Node) -> bool:
        return node.name == "br"


class XmlRules:
    """xml's blocks: the content of an element that holds text of its own (mixed content)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.mixed: dict[int, bool] = {}  # by parent: it holds text of its own

    def splits(self, node: Node, parent: Node) -> bool:
        if id(parent) not in self.mixed:
            texts = (c for c in parent.children if c.name == TEXT)
            self.mixed[id(parent)] = any(self.text[c.start : c.end].strip() for c in texts)
        return not self.mixed[id(parent)]

    def kept(self, node: Node) -> bool:
        return _declines(node)

    def shown(self, node: Node) -> bool:
        return True

    def separates(self, node: Node) -> bool:
        return False


class Layout:
    """The blocks of a document's tree, as `rules` lay them out."""

    def __init__(self, text: str, rules: Rules) -> None:
        self.text, self.rules = text, rules
        self.blocks: list[Block] = []

    def lay_out(self, node: Node) -> list[Block]:
        """The blocks inside `node`, in order."""
        run: list[Node] = []
        for child in node.children:
            if child.element and self.rules.splits(child, node):
                self._block(run)
                run = []
                if not self.rules.kept(child):
                    self.lay_out(child)
            else:
                run.append(child)
        self._block(run)
        return self.blocks

    def _block(self, run: list[Node]) -> None:
        """The block of a run of inline nodes, less what holds no words at either end."""
        holding = [i for i, node in enumerate(run) if self._holds_words(node)]
        if not holding:
            return
        first, last = run[holding[0]], run[holding[-1]]
        start = first.start + _leading_space(self.text, first) if first.name == TEXT else first.start
        end = last.end - _trailing_space(self.text, last) if last.name == TEXT else last.end
        reader = LineReader()
        for node in run[holding[0] : holding[-1] + 1]:
            self._feed(node, reader, start, end)
        self.blocks.append(Block(reader.finish(), self.text[start:end], tuple(reader.spaces), start))

    def _holds_words(self, node: Node) -> bool:
        if node.name == TEXT:
            return bool(html.unescape(self.text[node.start : node.end]).split())
        if node.name == OTHER or self.rules.kept(node):
            return False
        return any(self._holds_words(child) for child in node.children)

    def _feed(self, node: Node, reader: LineReader, start: int, end: int) -> None:
        """Read `node` (but what lies outside [start, end)) into `reader`."""
        raw = self.text[max(node.start, start) : min(node.end, end)]
        if node.name == TEXT:
            reader.text(html.unescape(raw))
        elif node.name == OTHER:
            reader.standalone(raw, node.start)
        elif self.rules.kept(node):
            reader.standalone(raw, node.start, word=self.rules.shown(node))
        elif not node.children and node.close == node.end:  # a void element, or one left empty
            if self.rules.separates(node):
                reader.separate()
            reader.standalone(raw, node.start)
        else:
            reader.open(self.text[node.start : node.inner], node.name, node.start)
            for child in node.children:
                self._feed(child, reader, start, end)
            reader.close(self.text[node.close : node.end], node.name, node.close)


def _leading_space(text: str, node: Node) -> int:
    raw = text[node.start : node.end]
    return len(raw) - len(raw.lstrip())


def _trailing_space(text: str, node: Node) -> int:
    raw = text[node.start : node.end]
    return len(raw) - len(raw.rstrip())


_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (and what follows it), "\r\n" too


def text_blocks(text: str) -> list[Block]:
    """The paragraphs of plain text: what lies between blank lines, less its spaces at either end."""
    blocks = []
    at = 0
    for part in [*_PARAGRAPH_BREAK.split(text)]:
        at = text.index(part, at)
        stripped = part.strip()
        if stripped:
            reader = LineReader()
            reader.text(stripped)
            offset = at + len(part) - len(part.lstrip())
            blocks.append(Block(reader.finish(), stripped, tuple(reader.spaces), offset))
        at += len(part)
    return blocks
