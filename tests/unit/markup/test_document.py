"""A document is split into blocks and kept text: written back as it was read it is byte for byte
the same; blocks are the runs of prose between block elements, without what is never translated."""

from __future__ import annotations

from pathlib import Path

import pytest

from seq2seq.markup.document import Document
from seq2seq.markup.formats import FORMATS, document_format
from seq2seq.markup.marked import MarkupError

DOCUMENTS = Path(__file__).parents[2] / "fixtures" / "documents"
CORPUS = {"article.html": "html", "manual.xml": "xml", "README.md": "markdown", "guide.md": "markdown"}
CORPUS |= {"notes.txt": "text"}


def read(text: str, kind: str) -> Document:
    return FORMATS[kind].read(text)


def block_texts(text: str, kind: str) -> list[str]:
    return [block.line.text for block in read(text, kind).blocks]


@pytest.mark.parametrize(("name", "kind"), CORPUS.items())
def test_a_document_written_back_as_read_is_the_same_bytes(name: str, kind: str):
    text = (DOCUMENTS / name).read_text(encoding="utf-8")
    document = read(text, kind)
    assert document.blocks
    assert document.written([block.raw for block in document.blocks]) == text


def test_html_blocks_are_the_prose_between_block_elements():
    html = (DOCUMENTS / "article.html").read_text(encoding="utf-8")
    texts = block_texts(html, "html")
    assert texts[:4] == ["Die Stadt am Fluss – Reiseberichte", "Startseite", "Reisen", "Kontakt"]
    assert "Museum" in texts and "12 €" in texts and "Die Brücke am Abend." in texts
    assert "Unser Hotel lag direkt am Ufer. Vom Fenster aus sahen wir die Brücke & die Altstadt." in texts
    # never translated: scripts, styles, comments, pre, translate="no", notranslate, form values
    joined = " ".join(texts)
    for kept in ["Der Text hier bleibt", "margin", "navigation", "Mo-Fr", "EUR", "GmbH", "Kommentar"]:
        assert kept not in joined
    assert "Hauptnavigation" not in joined  # an attribute is not text


def test_optional_end_tags_are_read_as_a_browser_reads_them():
    html = "<ul><li>One <b>bold</b><li>Two</ul><p>First<p>Second<div>Third</div><table><tr><td>a<td>b</table>"
    assert block_texts(html, "html") == ["One bold", "Two", "First", "Second", "Third", "a", "b"]


def test_br_and_block_boundaries_separate_words():
    assert block_texts("<p>Space<br>please?</p><p>a</p><p>b</p>", "html") == ["Space please?", "a", "b"]
    assert block_texts("<div>one<p>two</p>three</div>", "html") == ["one", "two", "three"]


def test_an_inline_element_around_blocks_keeps_its_tags_and_splits():
    html = '<a href="x"><div>Card title</div><p>Card text</p></a>'
    document = read(html, "html")
    assert [b.raw for b in document.blocks] == ["Card title", "Card text"]
    assert document.written(["T", "X"]) == '<a href="x"><div>T</div><p>X</p></a>'


def test_code_and_kept_spans_inside_a_block_are_words_never_read():
    (block,) = read("<p>Call <code>run()</code> now, <span translate=no>ACME</span>.</p>", "html").blocks
    assert block.line.words == ("Call", "now,", ".")
    assert [(t.opening, t.word) for t in block.line.tags] == [
        ("<code>run()</code>", True),
        ("<span translate=no>ACME</span>", True),
    ]


def test_raw_text_elements_hold_no_tags():
    html = (
        '<p>a</p><script>document.write("<p>not a block</p>")</script><style>p::after{content:"<b>"}</style>'
    )
    assert block_texts(html, "html") == ["a"]


def test_xml_blocks_are_the_elements_that_hold_text():
    xml = (DOCUMENTS / "manual.xml").read_text(encoding="utf-8")
    texts = block_texts(xml, "xml")
    assert texts[:2] == ["Handbuch der Wetterstation", "Erste Schritte"]
    assert "Temperatur & Luftfeuchte" in texts and "Luftdruck" in texts
    assert not any("ttyUSB0" in t or "serve" in t for t in texts)


def test_malformed_xml_is_refused_naming_its_line_and_column():
    with pytest.raises(MarkupError, match="line 2, column 6: mismatched tag"):
        read("<a>\n<b></a>", "xml")


def test_text_blocks_are_paragraphs():
    texts = block_texts((DOCUMENTS / "notes.txt").read_text(encoding="utf-8"), "text")
    assert texts == [
        "Notizen zur Reise",
        "Am Montag fuhren wir los. Der Zug war pünktlich. Am Dienstag regnete es den ganzen Tag.",
        "Am Mittwoch schien die Sonne wieder.",
        "Ende.",
    ]


def test_a_byte_order_mark_stays_outside_the_markup():
    document = read("\ufeff<p>Hallo</p>\n", "html")
    assert [b.raw for b in document.blocks] == ["Hallo"]
    assert document.written(["Hello"]) == "\ufeff<p>Hello</p>\n"


def test_an_unknown_format_lists_the_known_ones():
    with pytest.raises(MarkupError, match="choose one of html, xml, markdown, text"):
        document_format("pdf")


def test_only_translate_no_and_notranslate_keep_an_element():
    html = '<p hidden>a</p><p class>b</p><p title="">c</p><p translate=no>d</p><p class="x notranslate">e</p>'
    assert block_texts(html, "html") == ["a", "b", "c"]


@pytest.mark.parametrize("kind", ["text", "markdown", "html"])
def test_windows_line_ends_come_back_as_they_were(kind: str):
    text = (
        "Eins zwei.\r\nDrei.\r\n\r\n<p>Vier</p>\r\n"
        if kind == "html"
        else "Eins zwei.\r\nDrei.\r\n\r\nVier\r\n"
    )
    document = read(text, kind)
    assert len(document.blocks) == 2
    assert document.written([block.raw for block in document.blocks]) == text


def test_elements_nested_past_what_can_be_followed_are_refused():
    with pytest.raises(MarkupError, match="nest deeper than s2s follows"):
        read("<div>" * 5000 + "x", "html")
