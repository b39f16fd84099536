"""The kinds of document `s2s translate --format` reads: each splits its text into blocks and says
how a translated word is written in it. Chosen once, by name, where the command starts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from seq2seq.markup.document import Block, Document, HtmlRules, Layout, XmlRules, pieces_of, text_blocks
from seq2seq.markup.markdown import escape_markdown, markdown_blocks
from seq2seq.markup.marked import MarkupError
from seq2seq.markup.place import Escape, escape_html
from seq2seq.markup.tree import html_tree, xml_tree

BOM = "\ufeff"


@dataclass(frozen=True)
class DocumentFormat:
    """One kind of document: how its blocks are found, how its words are written."""

    name: str
    blocks: Callable[[str], list[Block]]
    escape: Escape

    def read(self, text: str) -> Document:
        """`text` split into kept text and blocks (a byte order mark is kept, outside the markup)."""
        bom = BOM if text.startswith(BOM) else ""
        body = text[len(bom) :]
        try:
            blocks = self.blocks(body)
        except RecursionError:
            raise MarkupError(
                f"the {self.name} document's elements nest deeper than s2s follows: close them"
            ) from None
        return Document((bom, *pieces_of(body, blocks)), self.escape)


def _html(text: str) -> list[Block]:
    return Layout(text, HtmlRules()).lay_out(html_tree(text))


def _xml(text: str) -> list[Block]:
    return Layout(text, XmlRules(text)).lay_out(xml_tree(text))


def _plain(word: str) -> str:
    return word


FORMATS = {
    f.name: f
    for f in (
        DocumentFormat("html", _html, escape_html),
        DocumentFormat("xml", _xml, escape_html),
        DocumentFormat("markdown", markdown_blocks, escape_markdown),
        DocumentFormat("text", text_blocks, _plain),
    )
}


def document_format(name: str) -> DocumentFormat:
    """The format called `name`; MarkupError listing the valid names otherwise."""
    if name not in FORMATS:
        raise MarkupError(f"unknown --format {name!r}: choose one of {', '.join(FORMATS)}")
    return FORMATS[name]
