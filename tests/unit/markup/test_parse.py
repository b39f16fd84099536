"""A line of markup is read into the words a model translates and tags kept byte for byte, each
around the words it wraps; malformed markup is refused with a message naming what and where."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from seq2seq.errors import Seq2SeqError
from seq2seq.markup.parse import DIALECTS, HTML, XML, MarkedLine, MarkupError, dialect, parse
from tests.unit.markup.lines import KITS, random_line


def spans(line: MarkedLine) -> list[tuple[str, str | None, int, int, int | None]]:
    return [(t.opening, t.closing, t.start, t.end, t.parent) for t in line.tags]


def test_the_words_are_the_text_without_tags():
    line = parse('Ein <b>großes</b> Haus mit <a href="x.html">Garten</a>.<br/>', HTML)
    assert line.words == ("Ein", "großes", "Haus", "mit", "Garten.")
    assert line.text == "Ein großes Haus mit Garten."
    assert spans(line) == [
        ("<b>", "</b>", 1, 2, None),
        ('<a href="x.html">', "</a>", 4, 5, None),
        ("<br/>", None, 5, 5, None),  # touching "Garten." on its left only: after it, at the end
    ]


def test_tags_are_kept_byte_for_byte():
    opening = """<a  href='x.html'   class=c data-x="1 > 0" hidden >"""
    line = parse(f"{opening}Garten</a  > <IMG src=a.png>", HTML)
    assert spans(line) == [(opening, "</a  >", 0, 1, None), ("<IMG src=a.png>", None, 1, 1, None)]


def test_a_tag_inside_a_word_takes_the_whole_word():
    assert spans(parse("<b>Haus</b>tür", XML)) == [("<b>", "</b>", 0, 1, None)]
    assert spans(parse("Haus<b>tür</b> x", XML)) == [("<b>", "</b>", 0, 1, None)]
    assert spans(parse("x Haus<br/>tür", XML)) == [("<br/>", None, 1, 1, None)]
    assert spans(parse("x<b></b>y", XML)) == [("<b>", "</b>", 0, 1, None)]


def test_a_tag_touching_one_word_stands_at_the_boundary_on_its_other_side():
    assert spans(parse("x<b> y</b>", XML)) == [("<b>", "</b>", 1, 2, None)]
    assert spans(parse("x<br/> y", XML)) == [("<br/>", None, 1, 1, None)]
    assert spans(parse("x <br/>y", XML)) == [("<br/>", None, 1, 1, None)]
    assert spans(parse("<b>x </b>y", XML)) == [("<b>", "</b>", 0, 1, None)]
    assert spans(parse("x <b></b>", XML)) == [("<b>", "</b>", 1, 1, None)]


def test_elements_know_their_parent():
    line = parse("<p>a <b>b <i>c</i><br/></b> <!-- n --></p>", HTML)
    assert [t.parent for t in line.tags] == [None, 0, 1, 1, 0]
    assert [(t.start, t.end) for t in line.tags] == [(0, 3), (1, 3), (2, 3), (3, 3), (3, 3)]


def test_entities_are_decoded_for_the_model():
    line = parse("A&amp;B &lt;x&gt; &quot;q&quot; &#39;s&apos; &#x41;&#66;", XML)
    assert line.text == """A&B <x> "q" 's' AB"""
    assert parse("caf&eacute; &hellip;", HTML).text == "café …"
    assert parse("a&nbsp;b", HTML).words == ("a", "b")  # a no-break space parts words like any space


def test_html_allows_what_html_allows():
    line = parse("AT&T: a < b &bogus; <3 <BR> <P>x</p> <img src=a.png alt=pic> <input disabled>", HTML)
    assert line.words == ("AT&T:", "a", "<", "b", "&bogus;", "<3", "x")
    assert [(t.opening, t.closing is None) for t in line.tags] == [
        ("<BR>", True),
        ("<P>", False),
        ("<img src=a.png alt=pic>", True),
        ("<input disabled>", True),
    ]


def test_an_html_element_closed_in_another_case_is_closed():
    assert spans(parse("<B>x</b>", HTML)) == [("<B>", "</b>", 0, 1, None)]


def test_comments_declarations_and_instructions_stand_alone():
    line = parse('<?xml version="1.0"?><!DOCTYPE x><!-- a <b> c -->x', XML)
    assert line.words == ("x",)
    assert [t.closing for t in line.tags] == [None, None, None]


@pytest.mark.parametrize(
    ("kind", "line", "told"),
    [
        ("xml", "Ein <b>Haus", ["column 5", "<b>", "never closed", "</b>"]),
        ("html", "<p>Ein Haus", ["column 1", "<p>", "never closed", "</p>"]),
        ("xml", "<br>", ["<br>", "never closed"]),
        ("xml", "Ein Haus</b>", ["column 9", "</b>", "closes no open element"]),
        ("html", "x<br></br>", ["column 6", "</br>", "closes no open element"]),
        ("xml", "<b><i>x</b></i>", ["column 8", "</b>", "<i>", "column 4", "</i>"]),
        ("html", "<B><I>x</b></i>", ["column 8", "</b>", "<I>", "</I>"]),
        ("xml", "a < b", ["column 3", "'<", "&lt;"]),
        ("html", "x <b", ["column 3", "<b", "&lt;"]),
        ("xml", '<a href=x.html class="c">y</a>', ["column 1", "quote", "&lt;"]),
        ("html", '<a href="x.html>y</a>', ["column 1", "<a href", "&lt;"]),
        ("xml", "AT&T", ["column 3", "'&'", "&amp;"]),
        ("xml", "a&nbsp;b", ["column 2", "&nbsp;", "xml entity"]),
        ("xml", "&#0;", ["column 1", "&#0;", "not a character"]),
        ("html", "x &#xD800;", ["column 3", "&#xD800;", "not a character"]),
        ("xml", "<![CDATA[a < b]]>", ["column 1", "CDATA"]),
    ],
)
def test_malformed_markup_is_refused_naming_what_and_where(kind: str, line: str, told: list[str]):
    with pytest.raises(MarkupError) as refused:
        parse(line, DIALECTS[kind])
    assert [t for t in told if t not in str(refused.value)] == [], str(refused.value)


def test_a_markup_error_is_a_user_error_and_unknown_markup_lists_the_choices():
    assert issubclass(MarkupError, Seq2SeqError)
    assert dialect("xml") is XML
    with pytest.raises(MarkupError, match="html, xml"):
        dialect("sgml")


@pytest.mark.parametrize("kind", ["html", "xml"])
def test_random_lines_keep_every_tag_and_nest_their_spans(kind: str):
    rng = random.Random(7)
    for _ in range(200):
        text = random_line(KITS[kind], rng, inside_words=True)
        line = parse(text, DIALECTS[kind])
        found = Counter(t.opening for t in line.tags) + Counter(t.closing for t in line.tags if t.closing)
        for raw, times in found.items():
            assert text.count(raw) >= times, (text, raw)
        assert all(0 <= t.start <= t.end <= len(line.words) for t in line.tags), text
        for k, tag in enumerate(line.tags):
            parent = line.tags[tag.parent] if tag.parent is not None else None
            assert parent is None or (tag.parent < k and parent.start <= tag.start <= tag.end <= parent.end)


def test_br_and_block_tags_part_words_in_html_only():
    assert parse("Space<br>please?", HTML).words == ("Space", "please?")
    assert parse("<p>one</p><p>two</p>", HTML).words == ("one", "two")
    assert parse("one<b>two</b>", HTML).words == ("onetwo",)  # an inline element does not
    assert parse("Space<br/>please?", XML).words == ("Spaceplease?",)
