from collections import Counter
from itertools import pairwise

import pytest
import torch

from seq2seq.batching import shard_batches, token_batches
from seq2seq.data.parallel import ParallelData, collate, read_parallel
from seq2seq.data.targets import TARGETS
from seq2seq.data.textio import count_lines, iter_line_chunks, read_lines, split_lines
from seq2seq.errors import DataError
from seq2seq.special import BOS, EOS, PAD


def test_line_count_mismatch_names_both_files_and_counts(tmp_path):
    (tmp_path / "a.de").write_text("eins\nzwei\ndrei\n", encoding="utf-8")
    (tmp_path / "a.en").write_text("one\ntwo\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_parallel(tmp_path / "a.de", tmp_path / "a.en")
    message = str(info.value)
    assert "a.de has 3 lines" in message and "a.en has 2" in message


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\nbroken \xff here\n")
    with pytest.raises(DataError, match=r"bad.txt: line 3 is not valid UTF-8"):
        read_lines(path)


def test_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="cannot read"):
        read_lines(tmp_path / "absent.txt")


def test_empty_corpus_is_an_error(tmp_path):
    (tmp_path / "s").write_text("\n\n", encoding="utf-8")
    (tmp_path / "t").write_text("x\n\n", encoding="utf-8")
    with pytest.raises(DataError, match="no sentence pair"):
        read_parallel(tmp_path / "s", tmp_path / "t")


def test_lines_split_only_on_newline():
    raw = "a\u2028b\x0cc\r\nd\n".encode()
    assert split_lines(raw, "x") == ["a\u2028b\x0cc", "d"]


@pytest.mark.parametrize("text", [b"", b"a", b"a\n", b"a\n\nb", b"\xef\xbb\xbfa\r\nb\n", b"x\n" * 5000])
def test_streamed_lines_equal_whole_file_lines(tmp_path, text):
    path = tmp_path / "t"
    path.write_bytes(text)
    streamed = [line for chunk in iter_line_chunks(path, block=7) for line in chunk]
    assert streamed == read_lines(path)
    assert count_lines(path) == len(read_lines(path))


def test_streamed_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\n" * 100 + b"broken \xff\n")
    with pytest.raises(DataError, match=r"bad.txt: line 101 is not valid UTF-8"):
        list(iter_line_chunks(path, block=16))


def test_batch_of_arrays_equals_collate_of_lists():
    src = [[5, 6, 7], [8], [9, 10]]
    tgt = [[11], [12, 13, 14, 15], [16, 17]]
    data = ParallelData.from_lists(src, tgt)
    rows = [2, 0]
    batch, expected = data.batch(rows), collate([src[i] for i in rows], [tgt[i] for i in rows])
    for name in ("src", "tgt_in", "tgt_out"):
        assert torch.equal(getattr(batch, name), getattr(expected, name))
    assert data.costs().tolist() == [4, 5, 3]
    assert data.src.sequences([2, 1]) == [[9, 10], [8]]


def test_collate_shifts_targets():
    batch = collate([[5, 6], [7]], [[8, 9, 10], [11]])
    assert batch.src.tolist() == [[5, 6, EOS], [7, EOS, PAD]]
    assert batch.tgt_in.tolist() == [[BOS, 8, 9, 10], [BOS, 11, PAD, PAD]]
    assert batch.tgt_out.tolist() == [[8, 9, 10, EOS], [11, EOS, PAD, PAD]]


def random_costs(n: int, seed: int = 0) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(2, 60, (n,), generator=g).tolist()


def test_every_example_exactly_once_per_epoch():
    costs = random_costs(1000)
    for epoch in range(3):
        batches = token_batches(costs, 300, seed=7, epoch=epoch)
        assert Counter(int(i) for b in batches for i in b) == Counter(range(1000))


def test_batches_respect_max_tokens_with_padding():
    costs = random_costs(1000)
    for batch in token_batches(costs, 300, seed=1, epoch=0):
        assert len(batch) * max(costs[i] for i in batch) <= 300


def test_oversized_example_gets_a_batch_alone():
    batches = token_batches([5, 500, 6], 100, seed=0)
    assert [1] in [b.tolist() for b in batches]


def test_order_depends_on_seed_and_epoch_reproducibly():
    costs = random_costs(500)

    def order(epoch: int) -> list[list[int]]:
        return [b.tolist() for b in token_batches(costs, 200, seed=3, epoch=epoch)]

    assert order(0) == order(0)
    assert order(0) != order(1)


def test_batches_match_the_greedy_definition():
    """Sorted by cost, a batch grows while (its size + 1) x the next cost fits in max_tokens."""
    costs = random_costs(700, seed=4)
    batches = token_batches(costs, 240)
    flat = [int(i) for b in batches for i in b]
    assert [costs[i] for i in flat] == sorted(costs)
    for batch, following in pairwise(batches):
        assert (len(batch) + 1) * costs[int(following[0])] > 240


def test_batches_cut_to_size_take_that_many_of_what_fits():
    """`size_to` cuts each batch of the greedy definition; the rest starts the next one."""
    costs = random_costs(700, seed=5)
    batches = token_batches(costs, 240, size_to=lambda n: max(n - n % 4, 1))
    flat = [int(i) for b in batches for i in b]
    assert [costs[i] for i in flat] == sorted(costs)
    start = 0
    for batch in batches:
        fit = 1  # what the greedy definition would have taken
        while start + fit < len(flat) and (fit + 1) * costs[flat[start + fit]] <= 240:
            fit += 1
        assert len(batch) == max(fit - fit % 4, 1)
        start += len(batch)


def test_bucketing_keeps_padding_low():
    costs = random_costs(2000)
    batches = token_batches(costs, 400, seed=0)
    padded = sum(len(b) * max(costs[i] for i in b) for b in batches)
    assert sum(costs) / padded > 0.9


@pytest.mark.parametrize("world", [1, 2, 3])
def test_shards_are_disjoint_equal_in_count_and_cover_the_epoch(world):
    batches = token_batches(random_costs(301), 250, seed=0)
    shards = [shard_batches(batches, rank, world) for rank in range(world)]
    assert len({len(s) for s in shards}) == 1
    seen = [i for shard in shards for b in shard for i in b]
    assert sorted(seen) == list(range(301))


@pytest.mark.parametrize("case", ["translate", "classify", "tag", "tag with an empty row"])
def test_target_tokens_count_each_examples_real_targets_as_a_batch_does(case):
    src = [[5, 6, 7], [8], [9, 10]]
    tgt = {
        "translate": [[11, 12], [13, 14, 15, 16], []],
        "classify": [[3], [4], [3]],
        "tag": [[3, PAD, 4], [PAD], [4, 4]],
        "tag with an empty row": [[3, PAD, 4], [], [4, 4]],
    }[case]
    task = case.split()[0]
    data = ParallelData.from_lists(src, tgt, TARGETS[task])
    counts = data.target_tokens()
    assert counts.tolist() == [data.batch([i]).num_tgt_tokens for i in range(len(src))]
    assert int(counts.sum()) == data.batch([0, 1, 2]).num_tgt_tokens
