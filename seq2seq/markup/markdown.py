"""A Markdown document's blocks, found by markdown-it-py (CommonMark, with tables and strikethrough).

Each paragraph, heading and table cell is a block; everything else is kept as written: code blocks
and fences, html blocks, link reference definitions, front matter (`---` lines at the top), and the
marks of the containers (`#`, `> `, `- `, `|`). In a block, emphasis, strong emphasis,
strikethrough, links and paired inline html tags are elements around the words they wrap, their
marks kept byte for byte (a link's `](target "title")` is its close tag, so a target is never
translated); inline code, images and autolinks are kept whole, each standing as a word; a hard line
break is a standalone tag; a soft line break parts words like a space. markdown-it-py gives no
positions inside a block, so each token is found in the block's text as it comes; a block where
one cannot be found (an escaped `|` in a table cell) is kept untranslated, with a warning.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.helpers import parseLinkLabel
from markdown_it.rules_inline import autolink, image, link
from markdown_it.rules_inline.state_inline import StateInline
from markdown_it.token import Token

from seq2seq.markup.document import Block
from seq2seq.markup.elements import KEPT
from seq2seq.markup.marked import LineReader

log = logging.getLogger(__name__)

_FRONT_MATTER = re.compile(r"---[ \t]*\n(?:.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_BREAK = re.compile(r"(?:\\|[ \t]*)\n[ \t]*")
_HTML_OPEN = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)(?:\s[^>]*)?(?<!/)>")
_HTML_CLOSE = re.compile(r"</([A-Za-z][A-Za-z0-9-]*)\s*>")
_ALWAYS = re.compile(r"[\\`*_\[\]|~]|&(?=#?\w+;)|<(?=[A-Za-z/!?])")
_NUMBERED = re.compile(r"\d{1,9}(?=[.)]$)")  # an ordered list item's mark
_LINE_MARK = re.compile(r"#{1,6}$|[-+=]+$|>")  # a heading's, a list item's, an underline's, a quote's
_ATTRIBUTES = re.compile(r"\{[#.:][^{}]*\}$")  # a heading's `{#anchor}` (attribute lists)


def escape_markdown(word: str) -> str:
    """A word as Markdown text: backslashes before what would start markup, here or at a line's start."""
    word = _ALWAYS.sub(lambda found: "\\" + found.group(), word)
    if _LINE_MARK.match(word):
        return "\\" + word
    if numbered := _NUMBERED.match(word):
        return word[: numbered.end()] + "\\" + word[numbered.end() :]
    return word


def _parser() -> MarkdownIt:
    # text_join would merge escapes and entities into the text around them: kept apart, their
    # tokens say how they were written
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable("text_join")


class _Unmapped(Exception):
    """A token of a block could not be found where it should be in the block's text."""


def markdown_blocks(text: str) -> list[Block]:
    """The blocks of a Markdown document, in order."""
    matter = _FRONT_MATTER.match(text)
    body_start = matter.end() if matter else 0
    md, env = _parser(), dict[str, object]()
    tokens = md.parse(text[body_start:], env)
    starts = [body_start, *(i + 1 for i, c in enumerate(text) if c == "\n" and i >= body_start)]
    cursor = body_start
    blocks = []
    for token in tokens:
        if token.type != "inline" or not token.content.strip() or token.map is None:
            continue
        try:
            source = _Source(text, starts, token.map[0], token.content, cursor)
            block = _Inline(md, env, token.content, source).block(token.children or [])
            cursor = source.to_source(len(token.content))
        except _Unmapped:
            line = token.map[0] + 1 + text.count("\n", 0, body_start)
            log.warning("line %d kept untranslated: its inline markup could not be followed", line)
            continue
        if block.line.words:
            blocks.append(block)
    return blocks


class _Source:
    """Where each character of a block's content (its lines without their containers' marks) lies
    in the document."""

    def __init__(self, text: str, starts: list[int], first_line: int, content: str, cursor: int) -> None:
        self.text = text
        self.lines: list[int] = []  # where each content line starts in the content
        self.places: list[int] = []  # and in the document
        at = 0
        for number, line in enumerate(content.split("\n"), start=first_line):
            if number >= len(starts):
                raise _Unmapped
            end = starts[number + 1] - 1 if number + 1 < len(starts) else len(text)
            found = text.find(line, max(cursor, starts[number]), end)
            if found < 0:
                raise _Unmapped
            self.lines.append(at)
            self.places.append(found)
            cursor = found + len(line)
            at += len(line) + 1

    def to_source(self, at: int) -> int:
        line = bisect.bisect_right(self.lines, at) - 1
        return self.places[line] + at - self.lines[line]

    def raw(self, start: int, end: int) -> str:
        """The document's text of content [start, end): with the containers' marks between lines."""
        return self.text[self.to_source(start) : self.to_source(end)]


class _Inline:
    """A block's inline tokens read into a `Block`, each found in the content as it comes."""

    def __init__(self, md: MarkdownIt, env: dict, content: str, source: _Source) -> None:
        self.md, self.env, self.content, self.source = md, env, content, source
        self.reader = LineReader()
        self.at = 0  # where the next token starts in the content
        self.links: list[tuple[int, int]] = []  # (label end, end) of the links open

    def block(self, children: Sequence[Token]) -> Block:
        """The block of the inline tokens `children` of the content."""
        pairs = _paired_html(children)
        k = 0
        while k < len(children):
            k = self._read(children, k, pairs)
        if self.at != len(self.content):
            raise _Unmapped
        start, end = self.source.to_source(0), self.source.to_source(len(self.content))
        return Block(self.reader.finish(), self.source.text[start:end], tuple(self.reader.spaces), start)

    def _read(self, children: Sequence[Token], k: int, pairs: dict[int, int]) -> int:
        """Read token `k`; the index of the next token not read with it."""
        token, at = children[k], self.at
        kind = token.type
        if kind == "text" and k == len(children) - 1 and (attributes := _ATTRIBUTES.search(token.content)):
            self._expect(token.content[: attributes.start()])
            self.reader.text(token.content[: attributes.start()])
            self._whole(self.at, self.at + len(attributes.group()))  # `{#anchor}`: not prose
        elif kind in ("text", "text_special"):
            self._expect(token.markup if kind == "text_special" else token.content)
            self.reader.text(token.content)
        elif kind == "html_inline":
            return self._html(children, k, pairs)
        elif kind in ("softbreak", "hardbreak"):
            found = _BREAK.match(self.content, at) or _fail()
            self.at = found.end()
            if kind == "softbreak":
                self.reader.space(self.source.raw(at, self.at))
            else:
                self.reader.separate()
                self.reader.standalone(self.source.raw(at, self.at), at)
        elif kind == "code_inline":
            ticks = re.compile(rf"(?<!`){re.escape(token.markup)}(?!`)")
            self._expect(token.markup)
            found = ticks.search(self.content, self.at) or _fail()
            self._whole(at, found.end())
        elif kind == "image":
            self._whole(at, self._rule_end(image))
        elif kind == "link_open" and token.markup == "autolink":
            self._whole(at, self._rule_end(autolink))
            return next(i for i in range(k, len(children)) if children[i].type == "link_close") + 1
        elif token.nesting:
            self._element(token)
        else:
            raise _Unmapped
        return k + 1

    def _element(self, token: Token) -> None:
        at = self.at
        if token.type == "link_open":
            state = StateInline(self.content, self.md, self.env, [])
            self.links.append((parseLinkLabel(state, at, True), self._rule_end(link)))
            self._expect("[")
            self.reader.open("[", "a", at)
        elif token.type == "link_close":
            label_end, end = self.links.pop()
            if at != label_end:
                raise _Unmapped
            self.at = end
            self.reader.close(self.source.raw(at, end), "a", at)
        else:
            self._expect(token.markup)
            written = self.source.raw(at, self.at)
            if token.nesting > 0:
                self.reader.open(written, token.tag, at)
            else:
                self.reader.close(written, token.tag, at)

    def _html(self, children: Sequence[Token], k: int, pairs: dict[int, int]) -> int:
        """An inline html tag: an element's open or close tag if it has its pair in the block (an
        element never translated, `<kbd>`, read whole), else a standalone tag."""
        at, written = self.at, children[k].content
        self._expect(written)
        name = _html_name(written)
        if k in pairs and name in KEPT:
            closing = children[pairs[k]].content
            if (found := self.content.find(closing, self.at)) < 0:
                raise _Unmapped
            self._whole(at, found + len(closing))
            return pairs[k] + 1
        if k in pairs:
            self.reader.open(written, name, at)
        elif k in pairs.values():
            self.reader.close(written, name, at)
        else:
            if name == "br":
                self.reader.separate()
            self.reader.standalone(written, at)
        return k + 1

    def _expect(self, written: str) -> None:
        if not self.content.startswith(written, self.at):
            raise _Unmapped
        self.at += len(written)

    def _whole(self, start: int, end: int) -> None:
        """Content [start, end) kept whole, as a word."""
        self.at = end
        self.reader.standalone(self.source.raw(start, end), start, word=True)

    def _rule_end(self, rule: object) -> int:
        """Where the construct that markdown-it's inline `rule` reads at the cursor ends."""
        state = StateInline(self.content, self.md, self.env, [])
        state.pos = self.at
        if not rule(state, True):  # type: ignore[operator]
            raise _Unmapped
        return state.pos


def _fail() -> re.Match[str]:
    raise _Unmapped


def _html_name(written: str) -> str:
    found = _HTML_OPEN.fullmatch(written) or _HTML_CLOSE.fullmatch(written)
    return found.group(1).lower() if found else ""


def _paired_html(children: Sequence[Token]) -> dict[int, int]:
    """The inline html tags that open an element closed within the block (nested as the rest), each
    with the index of its close tag."""
    stack: list[tuple[int, str | None]] = []  # (index, html name; None for Markdown's own)
    pairs: dict[int, int] = {}
    for k, token in enumerate(children):
        if token.type == "html_inline":
            if _HTML_OPEN.fullmatch(token.content):
                stack.append((k, _html_name(token.content)))
            elif _HTML_CLOSE.fullmatch(token.content) and stack and stack[-1][1] == _html_name(token.content):
                pairs[stack.pop()[0]] = k
        elif token.nesting > 0:
            stack.append((k, None))
        elif token.nesting < 0:
            while stack and stack[-1][1] is not None:  # html left open inside
                stack.pop()
            if stack:
                stack.pop()
    return pairs
