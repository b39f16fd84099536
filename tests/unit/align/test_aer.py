"""Alignment error rate: 0 for the reference itself, 1 for what it lacks, always in [0, 1], a possible
link never counted against a prediction, and a corpus counted as one long sentence pair."""

from __future__ import annotations

import random

import pytest

from seq2seq.align.aer import alignment_scores
from seq2seq.errors import AlignmentError


def random_corpus(rng: random.Random, lines: int = 8) -> list[set[tuple[int, int]]]:
    return [{(rng.randrange(6), rng.randrange(6)) for _ in range(rng.randrange(8))} for _ in range(lines)]


def test_the_reference_itself_scores_perfectly():
    reference = random_corpus(random.Random(0))
    scores = alignment_scores(reference, reference)
    assert (scores.aer, scores.precision, scores.recall) == (0.0, 1.0, 1.0)


def test_links_the_reference_lacks_score_one():
    predicted = [{(0, 0), (1, 1)}, {(2, 0)}]
    scores = alignment_scores(predicted, [{(0, 1)}, {(0, 2), (1, 1)}])
    assert (scores.aer, scores.precision, scores.recall) == (1.0, 0.0, 0.0)


def test_every_score_lies_between_zero_and_one():
    rng = random.Random(1)
    for _ in range(200):
        predicted, sure, extra = random_corpus(rng), random_corpus(rng), random_corpus(rng)
        for scores in (alignment_scores(predicted, sure), alignment_scores(predicted, sure, extra)):
            assert 0.0 <= scores.aer <= 1.0 and 0.0 <= scores.precision <= 1.0 and 0.0 <= scores.recall <= 1.0


def test_a_possible_link_costs_a_prediction_nothing_and_a_missing_one_is_not_missed():
    sure, possible = [{(0, 0)}], [{(1, 1)}]
    assert alignment_scores([{(0, 0), (1, 1)}], sure, possible).aer == 0.0
    assert alignment_scores([{(0, 0)}], sure, possible).aer == 0.0
    assert alignment_scores([{(0, 0), (1, 1)}], sure).aer > 0.0  # without it, (1, 1) is wrong


def test_the_definition_on_a_hand_counted_pair():
    # A = {0-0, 1-2}, S = {0-0, 1-1}: |A∩S| = |A∩P| = 1, AER = 1 - 2/4
    scores = alignment_scores([{(0, 0), (1, 2)}], [{(0, 0), (1, 1)}])
    assert (scores.aer, scores.precision, scores.recall) == (0.5, 0.5, 0.5)


def test_a_corpus_counts_as_one_sentence_pair_of_all_its_links():
    rng = random.Random(2)
    predicted, sure, possible = random_corpus(rng), random_corpus(rng), random_corpus(rng)

    def joined(corpus: list[set[tuple[int, int]]]) -> list[set[tuple[int, int]]]:
        # each line's words moved past the previous lines', so no two lines share a link
        return [{(i + 10 * n, j + 10 * n) for n, pairs in enumerate(corpus) for i, j in pairs}]

    assert alignment_scores(predicted, sure, possible) == alignment_scores(
        joined(predicted), joined(sure), joined(possible)
    )


def test_nothing_predicted_and_nothing_sure_is_no_error():
    assert alignment_scores([set(), set()], [set(), set()]).aer == 0.0


def test_sides_of_different_lengths_are_refused():
    with pytest.raises(AlignmentError, match="2 predicted alignment lines and 3 sure"):
        alignment_scores([set(), set()], [set()] * 3)
    with pytest.raises(AlignmentError, match="1 possible"):
        alignment_scores([set(), set()], [set()] * 2, [set()])
