"""grow-diag-final-and: between the intersection and the union of the two directions, the identity on
agreeing directions, grown as far as the definition allows, and final-and only linking unlinked words."""

from __future__ import annotations

import random

from seq2seq.align.symmetrize import NEIGHBOURS, grow_diag, grow_diag_final_and

Pairs = set[tuple[int, int]]


def random_directions(rng: random.Random) -> tuple[Pairs, Pairs]:
    """Two noisy views of one alignment, as a forward and a reverse run would give."""
    n = rng.randrange(1, 9)
    truth = {(i, min(n - 1, max(0, i + rng.choice((-1, 0, 0, 1))))) for i in range(n)}

    def noisy() -> Pairs:
        kept = {p for p in truth if rng.random() < 0.8}
        return kept | {(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randrange(3))}

    return noisy(), noisy()


def cases(count: int = 300, seed: int = 0) -> list[tuple[Pairs, Pairs]]:
    rng = random.Random(seed)
    return [random_directions(rng) for _ in range(count)]


def neighbours(point: tuple[int, int]) -> set[tuple[int, int]]:
    return {(point[0] + di, point[1] + dj) for di, dj in NEIGHBOURS}


def test_the_result_lies_between_the_intersection_and_the_union():
    for forward, reverse in cases():
        grown, result = set(grow_diag(forward, reverse)), set(grow_diag_final_and(forward, reverse))
        assert forward & reverse <= grown <= result <= forward | reverse


def test_agreeing_directions_give_their_alignment():
    for forward, _ in cases():
        assert grow_diag_final_and(forward, forward) == sorted(forward)


def test_the_result_is_sorted_and_distinct():
    for forward, reverse in cases():
        result = grow_diag_final_and(forward, reverse)
        assert result == sorted(set(result))


def test_grow_diag_depends_only_on_the_intersection_and_the_union():
    for forward, reverse in cases():
        assert grow_diag(forward, reverse) == grow_diag(reverse, forward)


def test_grow_diag_grows_until_no_union_point_can_join():
    """No union point left out touches the result and has an unlinked word: a pass would add it."""
    for forward, reverse in cases():
        grown = set(grow_diag(forward, reverse))
        sources, targets = {i for i, _ in grown}, {j for _, j in grown}
        for point in (forward | reverse) - grown:
            assert not (neighbours(point) & grown and (point[0] not in sources or point[1] not in targets))


def test_every_grown_point_touches_the_alignment_it_grew_from():
    for forward, reverse in cases():
        grown = set(grow_diag(forward, reverse))
        for point in grown - (forward & reverse):
            assert neighbours(point) & grown


def test_final_and_only_links_words_nothing_else_links():
    """A point final-and adds shares neither its source word nor its target word with another."""
    for forward, reverse in cases():
        grown, result = set(grow_diag(forward, reverse)), set(grow_diag_final_and(forward, reverse))
        for i, j in result - grown:
            assert [p for p in result if p[0] == i or p[1] == j] == [(i, j)]


def test_a_hand_worked_example():
    """Forward 0-0 1-1 2-2 3-0 4-4, reverse 0-0 1-1 2-1 4-3, worked by the definition:

    intersection          0-0 1-1
    grow from 1-1         2-1 (side, source 2 unlinked), then 2-2 (corner, target 2 unlinked)
    grow from 2-1         3-0 (corner, source 3 unlinked though target 0 is linked)
    next pass             nothing: every other union point has both words linked or touches nothing
    final-and, forward    4-4 (source 4 and target 4 both unlinked)
    final-and, reverse    not 4-3: source 4 is linked now
    """
    forward = {(0, 0), (1, 1), (2, 2), (3, 0), (4, 4)}
    reverse = {(0, 0), (1, 1), (2, 1), (4, 3)}
    assert grow_diag(forward, reverse) == [(0, 0), (1, 1), (2, 1), (2, 2), (3, 0)]
    assert grow_diag_final_and(forward, reverse) == [(0, 0), (1, 1), (2, 1), (2, 2), (3, 0), (4, 4)]
    # the other way round, final-and meets the reverse run's 4-3 first
    assert (4, 3) in grow_diag_final_and(reverse, forward)


def test_a_diagonal_chain_grows_whole_from_one_end():
    """Each grown point is grown from in turn, so the chain is followed to its far end."""
    chain = {(n, n) for n in range(6)}
    assert grow_diag({(0, 0)}, chain) == sorted(chain)


def test_no_links_give_no_links():
    assert grow_diag_final_and([], []) == [] and grow_diag_final_and([], [(0, 1)]) == [(0, 1)]
