"""Tags put back into a translation: whatever the alignment, the result parses, holds every raw tag
as often as the source and the target's words; with the identity alignment a line comes back."""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest

from seq2seq.markup.parse import DIALECTS, HTML, XML, MarkedLine, MarkupError, parse
from seq2seq.markup.place import PlacementRule, by_alignment, by_position, nest, place
from tests.unit.markup.lines import KITS, random_alignment, random_line, random_target

RULES = {"by_alignment": by_alignment, "by_position": by_position}


def raw_tags(line: MarkedLine) -> Counter[str]:
    return Counter(t.opening for t in line.tags) + Counter(t.closing for t in line.tags if t.closing)


def placements(line: MarkedLine, spans: list[tuple[int, int]]) -> Counter[tuple[object, ...]]:
    """Each tag's raw text, span and parent's opening, counted."""
    parents = [line.tags[t.parent].opening if t.parent is not None else None for t in line.tags]
    return Counter(
        (t.opening, t.closing, *span, parent)
        for t, span, parent in zip(line.tags, spans, parents, strict=True)
    )


def identity(line: MarkedLine) -> list[tuple[int, int]]:
    return [(i, i) for i in range(len(line.words))]


@pytest.mark.parametrize(
    "line",
    [
        'Ein <b>großes</b> Haus mit <a href="x.html">Garten.</a><br/>',
        "<p>Ein <b>Haus <i>mit</i></b> <!-- x --><img src=a.png>Garten</p>",
        "A &amp; B &lt;C&gt; <b></b>D <i>E</i><br>",
        "<br/><b><i>x</i></b>",
        "",
    ],
)
def test_the_identity_alignment_gives_a_written_out_line_back(line: str):
    source = parse(line, HTML)
    assert place(source, source.text, identity(source)) == line


def test_whitespace_and_tags_inside_words_come_back_at_word_boundaries():
    source = parse(' Ein  <b> großes</b>\tHaus mit <a href="x.html">Garten</a>.<br/> ', HTML)
    assert place(source, source.text, identity(source)) == (
        'Ein <b>großes</b> Haus mit <a href="x.html">Garten.</a><br/>'
    )


@pytest.mark.parametrize("kind", ["html", "xml"])
def test_with_the_identity_alignment_a_random_line_parses_as_it_did(kind: str):
    rng = random.Random(11)
    for _ in range(200):
        source = parse(random_line(KITS[kind], rng, inside_words=False), DIALECTS[kind])
        placed = place(source, source.text, identity(source))
        assert parse(placed, DIALECTS[kind]) == source, placed
        assert place(parse(placed, DIALECTS[kind]), source.text, identity(source)) == placed


@pytest.mark.parametrize("rule", RULES.values(), ids=RULES.keys())
@pytest.mark.parametrize("kind", ["html", "xml"])
def test_any_alignment_gives_well_formed_markup_with_every_tag_and_the_target_words(
    kind: str, rule: PlacementRule
):
    rng = random.Random(3)
    for _ in range(300):
        source = parse(random_line(KITS[kind], rng, inside_words=True), DIALECTS[kind])
        target = random_target(rng, most=len(source.words) + 4)
        n = len(target.split())
        alignment = random_alignment(rng, len(source.words), n)
        placed = place(source, target, alignment, rule)
        again = parse(placed, DIALECTS[kind])
        assert raw_tags(again) == raw_tags(source), placed
        assert again.words == tuple(target.split()), placed
        # each tag stands where the repaired rule put it, inside the same parent
        spans = nest(source.tags, rule(source, n, alignment), n)
        assert placements(again, [(t.start, t.end) for t in again.tags]) == placements(source, spans)


def test_entities_are_decoded_for_the_model_and_written_again():
    source = parse("<b>A &amp; B</b> &lt;C&gt; &quot;D&quot; caf&eacute;", HTML)
    assert source.text == 'A & B <C> "D" café'
    placed = place(source, 'X & Y <Z> "W" café', identity(source))
    assert placed == '<b>X &amp; Y</b> &lt;Z&gt; "W" café'
    assert parse(placed, XML).words == ("X", "&", "Y", "<Z>", '"W"', "café")
    lenient = parse("AT&T: a < b", HTML)  # html's bare '&' and '<' are text, written escaped
    assert place(lenient, lenient.text, identity(lenient)) == "AT&amp;T: a &lt; b"


def test_an_element_around_words_aligned_in_reverse_order_is_one_span():
    source = parse("<b>rote kleine</b> Häuser", XML)
    placed = place(source, "houses little red", [(0, 2), (1, 1), (2, 0)])
    assert placed == "houses <b>little red</b>"


def test_an_element_goes_around_every_target_word_between_its_first_and_last():
    source = parse('Ein <a href="x">großes Haus</a> steht', XML)
    assert place(source, "a big old house stands", [(1, 1), (2, 3)]) == (
        'a <a href="x">big old house</a> stands'
    )


def test_an_element_whose_words_are_unaligned_wraps_no_word_at_its_relative_place():
    source = parse("Ein <b>sehr</b> großes Haus", XML)
    placed = place(source, "a big house", [(0, 0), (2, 1), (3, 2)])
    assert placed == "a <b></b>big house"


def test_a_standalone_tag_goes_before_the_word_aligned_to_the_one_it_preceded():
    source = parse('Haus <img src="a.png"/>Garten<br/>', XML)
    assert place(source, "garden house", [(0, 1), (1, 0)]) == '<img src="a.png"/>garden house<br/>'
    # the word it preceded is unaligned: its relative place
    assert place(source, "garden house", [(0, 1)]) == 'garden <img src="a.png"/>house<br/>'


def test_the_baseline_uses_relative_positions_only():
    source = parse("a <b>b c</b> d", XML)
    assert place(source, "w x y z v u w x", [(0, 7)], by_position) == "w x <b>y z v u</b> w x"


def test_a_child_is_clamped_into_its_parent():
    tags = parse("<p><b>a</b> <i>b</i> <br/>c</p> d", XML).tags
    assert nest(tags, [(1, 3), (0, 2), (2, 5), (4, 4)], 5) == [(1, 3), (1, 2), (2, 3), (3, 3)]


def test_a_later_sibling_keeps_the_longest_run_of_words_an_earlier_one_left_it():
    tags = parse("<b>a</b> <i>b</i> <u>c</u>", XML).tags
    assert nest(tags, [(2, 5), (0, 8), (1, 3)], 8) == [(2, 5), (5, 8), (1, 2)]


def test_overlapping_siblings_are_made_disjoint_in_source_order():
    source = parse("<b>a b</b> <i>c d</i>", XML)
    assert place(source, "w x y z", [(0, 0), (1, 2), (2, 2), (3, 3)]) == "<b>w x y</b> <i>z</i>"
    # every word i wants is b's: i wraps none, after b
    assert place(source, "w x y z", [(0, 0), (1, 2), (2, 1), (3, 1)]) == "<b>w x y</b> <i></i>z"


def test_a_tag_without_words_that_falls_inside_a_sibling_moves_after_it():
    source = parse("<b>a b c</b> <br/>d", XML)
    assert place(source, "w x y z", [(0, 0), (2, 3), (3, 1)]) == "<b>w x y z</b><br/>"


@pytest.mark.parametrize("pairs", [[(2, 0)], [(0, 3)], [(-1, 0)]])
def test_an_alignment_outside_the_line_is_refused(pairs: list[tuple[int, int]]):
    with pytest.raises(MarkupError, match="2 words and the target 3"):
        place(parse("a b", XML), "x y z", pairs)


def test_a_long_line_with_thousands_of_tags_is_placed_in_near_linear_time():
    rng = random.Random(2)
    line = "<div>"
    while len(line) < 100_000:
        draw = rng.random()
        if draw < 0.35:
            line += f'<a href="#{rng.randint(0, 99)}">w{rng.randint(0, 9)} x y</a> '
        else:
            line += "<br>" if draw < 0.45 else f"word{rng.randint(0, 99)} "
    source = parse(line + "</div>", HTML)
    m = len(source.words)
    assert len(source.tags) > 3000
    # near the diagonal, with a third of the words linked anywhere: wide, overlapping spans to repair
    alignment = [(i, min(max(i + rng.randint(-2, 2), 0), m - 1)) for i in range(m)]
    alignment = [(i, rng.randrange(m)) if rng.random() < 0.3 else (i, j) for i, j in alignment]
    target = " ".join(f"t{j}" for j in range(m))
    began = time.perf_counter()
    placed = place(source, target, alignment)
    took = time.perf_counter() - began
    assert raw_tags(parse(placed, HTML)) == raw_tags(source)
    assert took < 5, f"{took:.1f} s to place {len(source.tags)} tags among {m} words"  # ~0.2 s on 2 cores
