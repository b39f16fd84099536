"""The words of a span that no sibling has taken yet, and their longest run: what nesting repair asks
once for each sibling (`seq2seq.markup.place.nest`).

A segment tree over the words [low, high): each node knows, for its words, the free run at its start,
the free run at its end, and its longest free run (the first of equals). Finding the longest free run
of a range combines O(log n) nodes; taking a run marks its words and recomputes their ancestors, and
each word is taken at most once, so a line's repair costs O(n + k log n) for n words and k tags,
where asking every taken span about every word cost O(n k).
"""

from __future__ import annotations

from typing import NamedTuple

Span = tuple[int, int]  # words [start, end)


class _Node(NamedTuple):
    """What a node knows of its words [start, start + size)."""

    start: int
    size: int
    head: int  # free words at its start
    tail: int  # free words at its end
    best: int  # the longest run of free words
    at: int  # where the first of the longest runs starts


def _join(left: _Node | None, right: _Node | None) -> _Node | None:
    """The node of `left`'s words followed by `right`'s."""
    if left is None or right is None:
        return left or right
    head = left.head if left.head < left.size else left.size + right.head
    tail = right.tail if right.tail < right.size else right.size + left.tail
    best, at = left.best, left.at
    # candidates in the order of their starts: a later one must be longer to win
    if left.tail + right.head > best:
        best, at = left.tail + right.head, right.start - left.tail
    if right.best > best:
        best, at = right.best, right.at
    return _Node(left.start, left.size + right.size, head, tail, best, at)


class FreeRuns:
    """The words [low, high), each free until a run holding it is taken."""

    def __init__(self, low: int, high: int) -> None:
        self.low = low
        self.leaves = 1 << max(high - low - 1, 0).bit_length()
        # words past `high` pad the tree to a power of two: taken, so that no run reaches them
        self.nodes = [_Node(0, 0, 0, 0, 0, 0)] * self.leaves + [
            _Node(low + w, 1, 1, 1, 1, low + w) if low + w < high else _Node(low + w, 1, 0, 0, 0, low + w)
            for w in range(self.leaves)
        ]
        for i in reversed(range(1, self.leaves)):
            self.nodes[i] = self._joined(i)

    def longest(self, start: int, end: int) -> Span:
        """The longest run of free words in [start, end), the first of equals; (start, start) if none."""
        left: _Node | None = None
        right: _Node | None = None
        lo, hi = start - self.low + self.leaves, end - self.low + self.leaves
        while lo < hi:
            if lo & 1:
                left = _join(left, self.nodes[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                right = _join(self.nodes[hi], right)
            lo, hi = lo >> 1, hi >> 1
        found = _join(left, right)
        return (found.at, found.at + found.best) if found is not None and found.best else (start, start)

    def take(self, start: int, end: int) -> None:
        """Mark the words [start, end) taken."""
        lo, hi = start - self.low + self.leaves, end - self.low + self.leaves
        for i in range(lo, hi):
            self.nodes[i] = _Node(self.low + i - self.leaves, 1, 0, 0, 0, self.low + i - self.leaves)
        lo, hi = lo >> 1, (hi - 1) >> 1
        while lo >= 1:
            for i in range(lo, hi + 1):
                self.nodes[i] = self._joined(i)
            lo, hi = lo >> 1, hi >> 1

    def _joined(self, i: int) -> _Node:
        joined = _join(self.nodes[2 * i], self.nodes[2 * i + 1])
        assert joined is not None
        return joined
