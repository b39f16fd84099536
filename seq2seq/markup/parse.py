"""One line of inline markup read into the plain text a model translates and the tags to put back.

Words: the words of a line are the `str.split` tokens of its plain text, which is the line with
its tags removed and its entities decoded (`&amp;` `&lt;` `&gt;` `&quot;` `&apos;`, `&#N;` and
`&#xN;`, and in html every named entity of `html.entities`; a decoded no-break space parts words
like any other space). The model reads `MarkedLine.text`: those words joined by single spaces.

Tags: each is kept byte for byte, attributes and quoting included. An element wraps the words
[start, end) between its open and its close tag. A standalone tag (`<x/>`, an html void element
such as `<br>` or `<img ...>`, a comment, `<?...?>`, `<!DOCTYPE ...>`) stands before word `start`
(`len(words)`: at the end). A tag that touches a word on one side only belongs to the word
boundary on its other side (`<b>Haus</b> Garten.<br/>`); a tag inside a word takes the whole word:
an element wraps it (`<b>Haus</b>tür` wraps `Haustür`), a standalone tag stands before it. In
html, `<br>` and the tags of block elements (`<p>`, `<li>`, `<td>`, ...: `elements.BLOCK`) part
words as a space does: `Space<br>please?` is two words. The reading itself is `marked.LineReader`'s.

Dialects: xml is strict: every tag well formed, attribute values quoted, and a `<` or `&` that
starts no tag or entity is an error. html allows what html allows: void elements without `/`,
unquoted attributes, tag names in any case, a `<` or `&` that starts no tag or entity is text. In
both, `<x/>` is standalone, every other element must be closed, and elements must nest. A
`MarkupError` names what is wrong and its column (from 1); the caller adds the line.
"""

from __future__ import annotations

import html.entities
import re
from collections.abc import Mapping
from dataclasses import dataclass

from seq2seq.markup.elements import BLOCK, VOID
from seq2seq.markup.marked import LineReader, MarkedLine, MarkupError


@dataclass(frozen=True)
class Dialect:
    """What one markup language allows; chosen once with `dialect` and handed to `parse`."""

    name: str
    opening: re.Pattern[str]  # an open or self-closing tag; groups: the name, "/" when self-closing
    void: frozenset[str]  # elements that stand alone without a "/" (lowercase)
    entities: Mapping[str, str]  # named entities with their ";": "amp;" -> "&"
    fold_case: bool  # tag names match in any case
    stray_is_text: bool  # a "<" or "&" that starts no tag or entity is text, not an error
    separating: frozenset[str]  # elements whose tags part words wherever they stand (lowercase)


_NAME = r"[^\W\d][\w.:-]*"
_XML_ATTRIBUTE = rf"""\s+{_NAME}\s*=\s*(?:"[^<"]*"|'[^<']*')"""
# html: any attribute name, a value that may be missing or unquoted
_HTML_ATTRIBUTE = r"""\s+[^\s"'<>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?"""
_OPENING = r"<({name})(?:{attribute})*\s*(/?)>"
_CLOSING = re.compile(rf"</({_NAME})\s*>")
_STANDALONE = re.compile(r"<!--.*?-->|<\?.*?\?>|<![A-Za-z][^>]*>")
_TAG_START = re.compile(r"<[/!?]|<[^\W\d]")  # what html too reads as the start of a tag
_ENTITY = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_SPECIAL = re.compile(r"[<&]")
_CDATA = "<![CDATA["

XML = Dialect(
    name="xml",
    opening=re.compile(_OPENING.format(name=_NAME, attribute=_XML_ATTRIBUTE)),
    void=frozenset(),
    entities={"amp;": "&", "lt;": "<", "gt;": ">", "quot;": '"', "apos;": "'"},
    fold_case=False,
    stray_is_text=False,
    separating=frozenset(),
)
HTML = Dialect(
    name="html",
    opening=re.compile(_OPENING.format(name=_NAME, attribute=_HTML_ATTRIBUTE)),
    void=VOID,
    # html5 also lists legacy names without ";" ("amp"); only the terminated forms are entities here
    entities={name: text for name, text in html.entities.html5.items() if name.endswith(";")},
    fold_case=True,
    stray_is_text=True,
    separating=BLOCK | {"br"},
)
DIALECTS = {d.name: d for d in (HTML, XML)}


def dialect(name: str) -> Dialect:
    """The dialect called `name`; MarkupError listing the valid names otherwise."""
    if name not in DIALECTS:
        raise MarkupError(f"unknown markup {name!r}: choose one of {', '.join(sorted(DIALECTS))}")
    return DIALECTS[name]


def parse(line: str, dialect: Dialect) -> MarkedLine:
    """The plain text, words and tags of one line; MarkupError says what is malformed and where."""
    return read(line, dialect).finish()


def read(line: str, dialect: Dialect) -> LineReader:
    """A reader that has read the whole line: `finish()` is its `parse`, `spaces` its spacing."""
    reader = _DialectReader(dialect)
    i = 0
    while (found := _SPECIAL.search(line, i)) is not None:
        reader.text(line[i : found.start()])
        at = found.start()
        i = _entity(line, at, reader) if line[at] == "&" else _tag(line, at, reader)
    reader.text(line[i:])
    return reader


def _entity(line: str, at: int, reader: _DialectReader) -> int:
    """Read the entity at `at` into the text; the position after it."""
    found = _ENTITY.match(line, at)
    if found is None:
        return _stray_ampersand(at, reader, "'&' starts no entity")
    body = found.group(1)
    text = _character(body, at) if body.startswith("#") else reader.dialect.entities.get(body + ";")
    if text is None:
        return _stray_ampersand(at, reader, f"{found.group()} is no {reader.dialect.name} entity")
    reader.text(text)
    return found.end()


def _stray_ampersand(at: int, reader: _DialectReader, what: str) -> int:
    """A '&' that starts no entity: text in html, an error in xml."""
    if not reader.dialect.stray_is_text:
        raise MarkupError(f"column {at + 1}: {what}: write a literal '&' as &amp;")
    reader.text("&")
    return at + 1


def _character(body: str, at: int) -> str:
    """The character a numeric reference `#N` or `#xN` stands for."""
    digits, base = (body[2:], 16) if body[1] in "xX" else (body[1:], 10)
    code = int(digits, base) if len(digits) <= 8 else 0  # longer is out of range, and slow to convert
    if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        raise MarkupError(f"column {at + 1}: {_shown(f'&{body};')} is not a character: remove it")
    return chr(code)


def _tag(line: str, at: int, reader: _DialectReader) -> int:
    """Read the tag at `at` (or, in html, a '<' that starts none as text); the position after it."""
    if line.startswith(_CDATA, at):
        raise MarkupError(f"column {at + 1}: CDATA sections are not supported: escape the text with &lt;")
    if found := _STANDALONE.match(line, at):
        reader.standalone(found.group(), at)
    elif found := _CLOSING.match(line, at):
        reader.part(found.group(1))
        reader.close(found.group(), found.group(1), at)
    elif found := reader.dialect.opening.match(line, at):
        reader.part(found.group(1))
        if found.group(2) or found.group(1).lower() in reader.dialect.void:
            reader.standalone(found.group(), at)
        else:
            reader.open(found.group(), found.group(1), at)
    elif reader.dialect.stray_is_text and not _TAG_START.match(line, at):
        reader.text("<")  # `a < b`, `<3`: html reads these as text
        return at + 1
    else:
        raise MarkupError(
            f"column {at + 1}: {_shown(line[at:])!r} starts no well-formed {reader.dialect.name} tag: "
            "end the tag with '>', quote its attribute values, or write a literal '<' as &lt;"
        )
    return found.end()


def _shown(text: str) -> str:
    """`text` cut short for a message."""
    return text if len(text) <= 24 else text[:21] + "..."


class _DialectReader(LineReader):
    """A `LineReader` that knows the dialect of its line."""

    def __init__(self, dialect: Dialect) -> None:
        super().__init__(dialect.fold_case)
        self.dialect = dialect

    def part(self, name: str) -> None:
        """A tag of element `name` is next: it ends the word before it if the element separates."""
        if name.lower() in self.dialect.separating:
            self.separate()
