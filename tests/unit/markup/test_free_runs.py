"""The longest free run of a range is the one a scan of every word finds, whatever was taken before."""

from __future__ import annotations

import random

from seq2seq.markup.free_runs import FreeRuns


def scanned(start: int, end: int, taken: set[int]) -> tuple[int, int]:
    """The longest run of words in [start, end) not in `taken`, the first of equals, word by word."""
    best, run = (start, start), start
    for word in range(start, end + 1):
        if word == end or word in taken:
            if word - run > best[1] - best[0]:
                best = (run, word)
            run = word + 1
    return best


def test_the_longest_free_run_is_the_first_of_the_longest_a_scan_finds():
    rng = random.Random(7)
    for _ in range(300):
        low = rng.randint(0, 5)
        high = low + rng.randint(0, 40)
        free, taken = FreeRuns(low, high), set()
        for _ in range(rng.randint(1, 12)):
            start = rng.randint(low, high)
            end = rng.randint(start, high)
            found = free.longest(start, end)
            assert found == scanned(start, end, taken), (low, high, start, end, sorted(taken))
            if found[0] < found[1] and rng.random() < 0.8:
                free.take(*found)
                taken |= set(range(*found))


def test_nothing_free_gives_an_empty_run_at_the_start():
    free = FreeRuns(2, 6)
    free.take(2, 6)
    assert free.longest(3, 5) == (3, 3)
    assert FreeRuns(4, 4).longest(4, 4) == (4, 4)
