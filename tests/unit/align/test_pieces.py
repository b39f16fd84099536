"""Words and pieces: each piece finds its word (as many words as the line has), word links become
piece targets past the control tokens, and attention over pieces reads back as the word links."""

from __future__ import annotations

import random

import numpy as np
import pytest

from seq2seq.align.pieces import aligned_source_pieces, alignment_matrix, attention_to_pairs, word_of_piece
from seq2seq.data.tokenizer import Tokenizer
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "run_v0"

# "Die Katze schläft ." -> "The cat sleeps .": pieces as a small vocabulary splits them
SRC = ["▁Die", "▁Kat", "ze", "▁", "schl", "äft", "▁."]  # words 0 1 1 2 2 2 3
TGT = ["▁The", "▁cat", "▁sleep", "s", "▁."]  # words 0 1 2 2 3
PAIRS = [(0, 0), (1, 1), (2, 2), (3, 3)]


@pytest.mark.parametrize(
    ("pieces", "words"),
    [
        (SRC, [0, 1, 1, 2, 2, 2, 3]),
        (TGT, [0, 1, 2, 2, 3]),
        (["▁", "Ü", "ber", "▁alles"], [0, 0, 0, 1]),  # a lone mark starts the word after it
        (["▁a", "▁", "▁b"], [0, 0, 1]),  # a mark with no letters after it stays with the word before
        (["▁", "▁a"], [0, 0]),
        (["▁a", "▁"], [0, 0]),
        (["Hel", "lo", "▁world"], [0, 0, 1]),  # a tokenizer without the leading space
        ([], []),
    ],
)
def test_each_piece_finds_its_word(pieces, words):
    assert word_of_piece(pieces) == words


def test_a_real_tokenizer_s_pieces_make_as_many_words_as_the_line_has():
    sp = Tokenizer(FIXTURE / "run/tokenizer/spm.model").sp
    lines = (FIXTURE / "data" / "train.src").read_text(encoding="utf-8").splitlines()[:50]
    lines += ["red cats   run fast", "Übermäßig 123 x", " leading and trailing spaces ", "ein-wort, zwei."]
    for line in lines:
        pieces = sp.encode(line, out_type=str)
        words = word_of_piece(pieces)
        assert max(words) + 1 == len(line.split()), (line, pieces)
        # joined, a word's pieces spell the word
        spelled = ["".join(p for p, w in zip(pieces, words, strict=True) if w == n) for n in set(words)]
        assert [word.replace("▁", "") for word in spelled] == line.split()


def test_a_target_piece_is_aligned_to_every_piece_of_its_source_word_past_the_controls():
    src, tgt = word_of_piece(SRC), word_of_piece(TGT)
    assert aligned_source_pieces(PAIRS, src, tgt) == [[0], [1, 2], [3, 4, 5], [3, 4, 5], [6]]
    assert aligned_source_pieces(PAIRS, src, tgt, shift=2) == [[2], [3, 4], [5, 6, 7], [5, 6, 7], [8]]


def test_an_unlinked_target_word_has_no_sources_and_a_word_without_pieces_adds_none():
    src, tgt = word_of_piece(SRC), word_of_piece(TGT)
    assert aligned_source_pieces([(0, 0), (9, 1), (1, 3), (3, 3)], src, tgt) == [[0], [], [], [], [1, 2, 6]]


def test_the_matrix_spreads_each_row_over_its_sources_and_leaves_the_rest_zero():
    src, tgt = word_of_piece(SRC), word_of_piece(TGT)
    pairs = [(0, 0), (1, 1), (2, 1), (3, 3)]  # target word 2 unlinked; "cat" to two source words
    matrix = alignment_matrix(pairs, src, tgt, shift=1, shape=(len(TGT) + 1, 1 + len(SRC) + 1))
    assert matrix.dtype == np.float32 and matrix.shape == (6, 9)
    assert matrix.sum(axis=1).tolist() == pytest.approx([1, 1, 0, 0, 1, 0])
    sources = aligned_source_pieces(pairs, src, tgt, shift=1)
    assert [np.flatnonzero(row).tolist() for row in matrix[: len(TGT)]] == sources
    assert not matrix[:, 0].any() and not matrix[:, -1].any()  # the control and </s> columns
    assert alignment_matrix(pairs, src, tgt, shift=1).shape == (len(TGT), 1 + len(SRC))


def test_attention_on_the_diagonal_past_the_controls_gives_the_diagonal():
    """Three one-piece words, two control tokens; most mass on the controls and </s> changes nothing."""
    shift, words = 2, [0, 1, 2]
    attention = np.zeros((4, shift + 3 + 1), dtype=np.float32)  # (T + </s>, controls + S + </s>)
    attention[:, 0], attention[:, -1] = 0.4, 0.3
    for t in range(3):
        attention[t, shift + t] = 0.2
        attention[t, shift + (t + 1) % 3] = 0.1
    attention[3, shift] = 0.3  # the </s> row points at word 0, and is not a word
    assert attention_to_pairs(attention, words, words, shift) == [(0, 0), (1, 1), (2, 2)]


def test_a_source_word_s_share_is_all_its_pieces():
    """A word of three pieces at 0.2 each (0.6) beats a one-piece word at 0.4."""
    attention = np.array([[0.4, 0.2, 0.2, 0.2]])  # (T=1, S=4)
    assert attention_to_pairs(attention, [0, 1, 1, 1], [0]) == [(1, 0)]


def test_a_target_word_s_pieces_vote_together():
    attention = np.array([[0.6, 0.4], [0.0, 1.0]])  # two pieces of one target word
    assert attention_to_pairs(attention, [0, 1], [0, 0]) == [(1, 0)]


def test_a_target_word_with_no_attention_on_the_source_words_gets_no_link():
    attention = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # word 1 looks only at </s>
    assert attention_to_pairs(attention, [0, 1], [0, 1]) == [(1, 0)]


def test_one_to_one_links_survive_the_trip_through_pieces():
    """Word links -> piece targets -> read back as attention: the same links, for random splits."""
    rng = random.Random(0)

    def word_of(words: int) -> list[int]:
        return [w for w in range(words) for _ in range(rng.randint(1, 3))]  # 1 to 3 pieces a word

    for _ in range(100):
        n, shift = rng.randrange(1, 7), rng.randrange(3)
        src, tgt, order = word_of(n), word_of(n), rng.sample(range(n), n)
        pairs = sorted((order[j], j) for j in range(n))
        matrix = alignment_matrix(pairs, src, tgt, shift, shape=(len(tgt) + 1, shift + len(src) + 1))
        assert attention_to_pairs(matrix, src, tgt, shift) == sorted(pairs, key=lambda p: p[1])


def test_no_pieces_give_no_links():
    assert attention_to_pairs(np.zeros((1, 3)), [], [], shift=2) == []
    assert aligned_source_pieces([(0, 0)], [], [0]) == [[]]
