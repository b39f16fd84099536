"""grow-diag-final-and: one alignment from a forward (source->target) and a reverse (target->source) run.

The heuristic of Koehn et al. as Moses defines it:

1. start from the intersection of both directions (precise, sparse);
2. grow-diag: go over the alignment points in order (source word, then target word); add each
   neighbour of a point, the eight around it, that is in the union and leaves its source word or its
   target word unaligned; repeat while a pass adds a point;
3. final-and: go over the forward points in order, then the reverse ones, and add each whose source
   word and target word are both still unaligned.

Both inputs are pairs (source word, target word): a reverse run's links are given source first too.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from seq2seq.align import Pair

# the eight points around a point, sides first, then corners (the "diag" of grow-diag)
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


class _Alignment:
    """Alignment points, with the source and the target words they cover kept beside them."""

    def __init__(self, points: Iterable[Pair]) -> None:
        self.points = set(points)
        self.sources = {i for i, _ in self.points}
        self.targets = {j for _, j in self.points}

    def add(self, point: Pair) -> None:
        self.points.add(point)
        self.sources.add(point[0])
        self.targets.add(point[1])


def _grow(forward: set[Pair], reverse: set[Pair]) -> _Alignment:
    """Steps 1 and 2: the intersection, grown through diagonal neighbours in the union."""
    union, alignment = forward | reverse, _Alignment(forward & reverse)
    grew = True
    while grew:
        grew = False
        # the pass visits points in grid order and sees what it adds: a point added ahead of the one
        # being visited is visited in this pass, one behind it waits for the next (a sorted list is a heap)
        queue = sorted(alignment.points)
        while queue:
            here = heapq.heappop(queue)
            for di, dj in NEIGHBOURS:
                point = (here[0] + di, here[1] + dj)
                if point not in union or point in alignment.points:
                    continue
                if point[0] not in alignment.sources or point[1] not in alignment.targets:
                    alignment.add(point)
                    grew = True
                    if point > here:
                        heapq.heappush(queue, point)
    return alignment


def _final_and(alignment: _Alignment, candidates: set[Pair]) -> None:
    """Step 3 for one direction: add each candidate whose two words are both unaligned."""
    for point in sorted(candidates):
        if point[0] not in alignment.sources and point[1] not in alignment.targets:
            alignment.add(point)


def grow_diag(forward: Iterable[Pair], reverse: Iterable[Pair]) -> list[Pair]:
    """The intersection of both directions grown through neighbouring union points, sorted."""
    return sorted(_grow(set(forward), set(reverse)).points)


def grow_diag_final_and(forward: Iterable[Pair], reverse: Iterable[Pair]) -> list[Pair]:
    """grow-diag, then the union points whose source and target words are both unaligned, sorted."""
    forward_points, reverse_points = set(forward), set(reverse)
    alignment = _grow(forward_points, reverse_points)
    _final_and(alignment, forward_points)
    _final_and(alignment, reverse_points)
    return sorted(alignment.points)
