"""The batch sizes a search holds: few of them, never far above the live rows, and each batch
starts at one. (That the rows past the live ones change no hypothesis is a search property:
`test_search.test_a_batch_held_at_few_sizes_finds_what_an_exact_batch_finds`.)"""

import torch

from seq2seq.decoding.ladder import held_after_drop, held_rows, held_size_within, pad_rows


def test_a_held_batch_takes_few_sizes_at_most_a_quarter_above_the_live_rows():
    sizes = [held_rows(n) for n in range(1, 2001)]
    assert all(n <= h <= 1.25 * n for n, h in zip(range(1, 2001), sizes, strict=True))
    assert all(held_rows(h) == h for h in sizes)  # a held size holds itself: no creeping up
    assert sizes[:8] == list(range(1, 9))  # small batches are exact
    assert len(set(sizes)) <= 8 + 4 * 8  # 1..8, then four sizes per doubling up to 2,048


def test_a_batch_starts_at_the_largest_held_size_that_fits():
    for n in range(1, 2001):
        size = held_size_within(n)
        assert held_rows(size) == size and 0.8 * n <= size <= n
        assert all(held_rows(m) != m for m in range(size + 1, n + 1))


def test_rows_held_after_a_drop_pad_with_the_last_kept_row_and_never_grow():
    keep = torch.tensor([0, 2, 5, 6, 7, 9, 11, 12, 13])  # 9 sentences kept: held at 10
    held, index = held_after_drop(keep, 16)
    assert held == 10 and index.tolist() == [*keep.tolist(), 13]
    held, index = held_after_drop(keep, 9)  # never more rows than were held before
    assert held == 9 and index.tolist() == keep.tolist()
    x = torch.arange(6).view(3, 2)
    assert pad_rows(x, 5).tolist() == [[0, 1], [2, 3], [4, 5], [4, 5], [4, 5]]
    assert pad_rows(x, 2) is x  # never cut
