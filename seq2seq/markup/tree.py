"""A whole html or xml document read into a tree whose every node knows where it lies in the text,
so that what is not translated can be written back byte for byte.

html is read as browsers read it: Python's `html.parser` tokenizes (raw text elements such as
`<script>` and `<style>` hold text, never tags), and the tree is built with HTML's rules for the
end tags a document may leave out (`elements.IMPLIED_ENDS`: a `<li>` ends the open `<li>`, a `<div>`
the open `<p>`); an end tag ends every element opened inside its element, and an end tag that ends
no open element is kept as it is, as text is. html is never refused. xml is read by expat, strictly:
a document that is not well formed is a `MarkupError` naming its line and column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from xml.parsers import expat

from seq2seq.markup.elements import IMPLIED_ENDS, VOID
from seq2seq.markup.marked import MarkupError

TEXT = "#text"  # the name of a text node
OTHER = "#other"  # a comment, a declaration, a processing instruction, CDATA, a stray end tag


@dataclass
class Node:
    """An element, or a run of text, or another piece of markup, at [start, end) of the document.

    An element's start tag is [start, inner), its content [inner, close), its end tag [close, end)
    (empty where the end tag was left out); other nodes are all content."""

    name: str  # an element's name (lowercase in html), or TEXT, or OTHER
    start: int
    end: int = -1
    attributes: dict[str, str | None] = field(default_factory=dict)
    inner: int = -1
    close: int = -1
    children: list[Node] = field(default_factory=list)

    @property
    def element(self) -> bool:
        return not self.name.startswith("#")


class _Builder:
    """A tree built from events (name, where they start) in document order."""

    def __init__(self, size: int) -> None:
        self.root = Node("#document", 0, size, inner=0, close=size)
        self.open = [self.root]
        self.last: Node | None = None  # the node whose extent the next event ends

    def at(self, offset: int) -> None:
        """An event starts at `offset`: what was read before it ends there."""
        last = self.last
        if last is not None:
            if last.inner < 0:
                last.inner = offset
            elif last.end < 0:
                last.end = offset
            self.last = None

    def leaf(self, name: str, offset: int) -> None:
        self.at(offset)
        parent = self.open[-1]
        if name == TEXT and parent.children and parent.children[-1].name == TEXT:
            self.last = parent.children[-1]  # more of the same text
            self.last.end = -1
            return
        node = Node(name, offset, inner=offset)
        parent.children.append(node)
        self.last = node

    def start(self, name: str, attributes: dict[str, str | None], offset: int, empty: bool) -> None:
        self.at(offset)
        node = Node(name, offset, attributes=attributes)
        self.open[-1].children.append(node)
        self.last = node
        if empty:
            node.close = -2  # ends where its start tag ends
        else:
            self.open.append(node)

    def end(self, name: str, offset: int) -> bool:
        """An end tag: it ends `name` and every element opened inside it; False if none is open."""
        depth = next((d for d in range(len(self.open) - 1, 0, -1) if self.open[d].name == name), 0)
        if not depth:
            return False
        self.at(offset)
        for node in self.open[depth + 1 :]:
            node.close = node.end = offset
        node = self.open[depth]
        node.close = offset
        del self.open[depth:]
        self.last = node
        return True

    def implied_ends(self, name: str, offset: int) -> None:
        """End the open elements that a start tag `name` ends in html."""
        for closes, scope in IMPLIED_ENDS.get(name, ()):
            found = 0
            for depth in range(len(self.open) - 1, 0, -1):
                if self.open[depth].name in scope:
                    break
                if self.open[depth].name in closes:
                    found = depth
            if found:
                self.at(offset)
                for node in self.open[found:]:
                    node.close = node.end = offset
                del self.open[found:]

    def finish(self) -> Node:
        size = self.root.end
        self.at(size)
        for node in self.open[1:]:
            node.close = node.end = size
        _settle(self.root)
        return self.root


def _settle(node: Node) -> None:
    """Fill in the ends that the events left open: an empty element's, a leaf's."""
    for child in node.children:
        if child.close == -2:
            child.close = child.end = child.inner
        elif not child.element:
            child.close = child.end
        _settle(child)


class _HtmlEvents(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = _Builder(len(text))
        self.lines = [0]
        self.lines += [i + 1 for i, c in enumerate(text) if c == "\n"]

    def here(self) -> int:
        """Where the event being handled starts."""
        line, column = self.getpos()
        return self.lines[line - 1] + column

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.builder.implied_ends(tag, self.here())
        self.builder.start(tag, dict(attrs), self.here(), tag in VOID)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # html reads `<div/>` as `<div>`; only a void element stands alone
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if not self.builder.end(tag, self.here()):
            self.builder.leaf(OTHER, self.here())

    def handle_data(self, data: str) -> None:
        self.builder.leaf(TEXT, self.here())

    def handle_comment(self, data: str) -> None:
        self.builder.leaf(OTHER, self.here())

    def handle_decl(self, decl: str) -> None:
        self.builder.leaf(OTHER, self.here())

    def handle_pi(self, data: str) -> None:
        self.builder.leaf(OTHER, self.here())

    def unknown_decl(self, data: str) -> None:
        self.builder.leaf(OTHER, self.here())


def html_tree(text: str) -> Node:
    """The tree of an html document, as a browser builds it."""
    events = _HtmlEvents(text)
    events.feed(text)
    events.close()
    return events.builder.finish()


def xml_tree(text: str) -> Node:
    """The tree of a well-formed xml document; MarkupError naming the line and column otherwise."""
    data = text.encode("utf-8")
    builder = _Builder(len(text))
    parser = expat.ParserCreate("UTF-8")
    # expat counts bytes; nodes count characters: each event's offset is converted as it comes
    chars = [0, 0]  # (bytes, characters) read so far

    def offset() -> int:
        at = parser.CurrentByteIndex
        chars[1] += len(data[chars[0] : at].decode("utf-8"))
        chars[0] = at
        return chars[1]

    cdata = [False]  # inside a CDATA section: its text is part of the section's node

    def leaf(name: str) -> None:
        if not cdata[0]:
            builder.leaf(name, offset())

    def cdata_starts() -> None:
        leaf(OTHER)
        cdata[0] = True

    parser.StartElementHandler = lambda name, attributes: builder.start(name, attributes, offset(), False)
    parser.EndElementHandler = lambda name: builder.end(name, offset())  # `<x/>`: after its tag
    parser.CharacterDataHandler = lambda _: leaf(TEXT)
    parser.CommentHandler = lambda _: leaf(OTHER)
    parser.ProcessingInstructionHandler = lambda _, __: leaf(OTHER)
    parser.StartCdataSectionHandler = cdata_starts
    parser.EndCdataSectionHandler = lambda: cdata.__setitem__(0, False)
    parser.DefaultHandlerExpand = lambda _: leaf(OTHER)
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise MarkupError(
            f"line {e.lineno}, column {e.offset + 1}: {expat.ErrorString(e.code)}: an xml document "
            "must be well formed"
        ) from None
    return builder.finish()
