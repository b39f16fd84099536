import logging
from collections import Counter

import pytest
import torch

from seq2seq.config import TokenizerConfig
from seq2seq.data import (
    ParallelData,
    collate,
    load_training_pairs,
    read_parallel,
    shard_batches,
    token_batches,
)
from seq2seq.errors import DataError
from seq2seq.textio import read_lines, split_lines
from seq2seq.tokenizer import BOS, EOS, PAD, prepare_tokenizers
from tests.conftest import write_corpus


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
        assert Counter(i for b in batches for i in b) == Counter(range(1000))


def test_batches_respect_max_tokens_with_padding():
    costs = random_costs(1000)
    for batch in token_batches(costs, 300, seed=1, epoch=0):
        assert len(batch) * max(costs[i] for i in batch) <= 300


def test_oversized_example_gets_a_batch_alone():
    batches = token_batches([5, 500, 6], 100, seed=0)
    assert [1] in batches


def test_order_depends_on_seed_and_epoch_reproducibly():
    costs = random_costs(500)
    a = token_batches(costs, 200, seed=3, epoch=0)
    assert a == token_batches(costs, 200, seed=3, epoch=0)
    assert a != token_batches(costs, 200, seed=3, epoch=1)


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


def test_empty_sides_and_long_pairs_dropped_and_counted(tmp_path, caplog):
    src, tgt = write_corpus(tmp_path, "c", 50, seed=0)
    lines_s = src.read_text().splitlines() + ["", "only source", "red " * 40]
    lines_t = tgt.read_text().splitlines() + ["only target", "", "RED " * 40]
    src.write_text("\n".join(lines_s) + "\n")
    tgt.write_text("\n".join(lines_t) + "\n")
    toks = prepare_tokenizers(TokenizerConfig(vocab_size=60), src, tgt, tmp_path / "tok")
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        data = load_training_pairs(toks, src, tgt, max_len=30, max_ratio=3.0)
    assert len(data) == 50
    assert "53 read, 50 kept; dropped 2 with an empty side, 1 longer than 30 tokens" in caplog.text


def test_length_ratio_filter(tmp_path):
    (tmp_path / "s").write_text("red\nred blue\n", encoding="utf-8")
    (tmp_path / "t").write_text(("RED " * 30) + "\nBLUE RED\n", encoding="utf-8")
    toks = prepare_tokenizers(
        TokenizerConfig(vocab_size=20), tmp_path / "s", tmp_path / "t", tmp_path / "tok"
    )
    data = load_training_pairs(toks, tmp_path / "s", tmp_path / "t", max_len=100, max_ratio=3.0)
    assert len(data) == 1 and isinstance(data, ParallelData)
