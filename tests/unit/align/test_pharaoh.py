"""Pharaoh lines: what is formatted reads back the same, and a malformed line is refused naming its
line and pair."""

from __future__ import annotations

import random

import pytest

from seq2seq.align.pharaoh import format_pharaoh, parse_pharaoh, parse_pharaoh_lines
from seq2seq.errors import AlignmentError, Seq2SeqError


def random_pairs(rng: random.Random) -> set[tuple[int, int]]:
    return {(rng.randrange(12), rng.randrange(12)) for _ in range(rng.randrange(15))}


def test_format_then_parse_gives_the_pairs_back_sorted():
    rng = random.Random(0)
    for _ in range(200):
        pairs = random_pairs(rng)
        assert parse_pharaoh(format_pharaoh(pairs), 12, 12) == sorted(pairs)


def test_parse_then_format_gives_a_canonical_line_back():
    assert format_pharaoh(parse_pharaoh("  2-1 0-0\t1-3 0-0 ")) == "0-0 1-3 2-1"


def test_an_empty_line_has_no_pairs():
    assert parse_pharaoh("", 0, 0) == [] and parse_pharaoh("   \n") == [] and format_pharaoh([]) == ""


@pytest.mark.parametrize("pair", ["1-", "-1", "a-b", "1:2", "1-2-3", "-1-2", "1", "1–2", "١-٢", "1-2p"])
def test_a_malformed_pair_is_refused_naming_its_line_and_pair(pair):
    with pytest.raises(AlignmentError, match=r"line 7: .*not SOURCE-TARGET") as caught:
        parse_pharaoh(f"0-0 {pair} 1-1", 5, 5, line_number=7)
    assert repr(pair) in str(caught.value)


@pytest.mark.parametrize(("line", "side"), [("3-0", "source word 3"), ("0-2", "target word 2")])
def test_an_index_past_its_side_is_refused_naming_the_line_pair_and_count(line, side):
    with pytest.raises(AlignmentError, match=rf"line 4: the alignment pair '{line}' names {side}, but"):
        parse_pharaoh(f"0-0 {line}", src_words=3, tgt_words=2, line_number=4)


def test_the_last_word_of_each_side_is_in_range():
    assert parse_pharaoh("2-1", src_words=3, tgt_words=2) == [(2, 1)]


def test_an_alignment_error_is_a_user_error():
    assert issubclass(AlignmentError, Seq2SeqError)


def test_lines_are_numbered_from_one_and_checked_against_their_own_counts():
    lines = ["0-0", "", "1-1 0-0"]
    assert parse_pharaoh_lines(lines, [(1, 1), (0, 0), (2, 2)]) == [[(0, 0)], [], [(0, 0), (1, 1)]]
    with pytest.raises(AlignmentError, match="line 3: .*'1-1' names source word 1"):
        parse_pharaoh_lines(lines, [(1, 1), (0, 0), (1, 2)])


def test_lines_and_word_counts_must_be_as_many():
    with pytest.raises(AlignmentError, match="2 alignment lines for 3 sentence pairs"):
        parse_pharaoh_lines(["0-0", "0-0"], [(1, 1)] * 3)
