"""The prepared corpus: the ids of in-memory tokenization, reused only while valid, written atomically."""

from __future__ import annotations

import dataclasses
import logging
import os
import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from seq2seq.batching import token_batches
from seq2seq.config import Config, config_from_dict
from seq2seq.data import encode
from seq2seq.data import prepared as prepare
from seq2seq.data.corpora import file_corpora
from seq2seq.data.parallel import ParallelData
from seq2seq.data.prepared import (
    ensure_prepared_corpus,
    load_prepared,
    load_prepared_part,
    prepared_corpus_dir,
)
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import load_tokenizers, tokenizer_checksums, train_or_load_tokenizers
from seq2seq.data.tokenizer_sample import sample_lines
from seq2seq.errors import DataError
from seq2seq.run.checks import data_checksums
from tests.conftest import tiny_config_dict, write_corpus


def corpus_config(tmp_path: Path, **data: object) -> tuple[Config, Path]:
    """The tiny config (with `data` overrides) and a tokenizer trained for it in tmp_path/tok."""
    raw = tiny_config_dict(tmp_path)
    raw["data"] |= data
    cfg = config_from_dict(raw)
    tok_dir = tmp_path / "tok"
    train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tok_dir)
    return cfg, tok_dir


def make(cfg: Config, tok_dir: Path, workers: int = 1) -> dict:
    """The manifest of the prepared corpus (of its one corpus, or by name when there are several)."""
    sums = tokenizer_checksums(tok_dir, cfg.tokenizer.joint)
    manifests = ensure_prepared_corpus(cfg, tok_dir, data_checksums(cfg), sums, workers)
    return manifests["train"] if list(manifests) == ["train"] else manifests


def loaded(cfg: Config):
    return load_prepared(prepared_corpus_dir(cfg), cfg.data.training_corpora())


def in_memory(cfg: Config, tok_dir: Path) -> tuple[list[list[int]], list[list[int]]]:
    """What the corpus tokenizes to line by line, with the length filter applied."""
    toks = load_tokenizers(tok_dir, cfg.tokenizer.joint)
    src = [ids for path in cfg.data.train_src for ids in toks.src.encode(read_lines(path))]
    tgt = [ids for path in cfg.data.train_tgt for ids in toks.tgt.encode(read_lines(path))]
    limit, ratio = cfg.data.max_len, cfg.data.max_len_ratio
    keep = [
        i
        for i, (s, t) in enumerate(zip(src, tgt, strict=True))
        if s and t and max(len(s), len(t)) <= limit and max(len(s), len(t)) <= ratio * min(len(s), len(t))
    ]
    return [src[i] for i in keep], [tgt[i] for i in keep]


@pytest.mark.slow
def test_prepared_ids_equal_in_memory_tokenization_across_chunks_and_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(encode, "CHUNK_PAIRS", 37)  # many chunks, finished out of order by 2 workers
    cfg, tok_dir = corpus_config(tmp_path)
    src, tgt = in_memory(cfg, tok_dir)
    manifest = make(cfg, tok_dir, workers=2)
    data = loaded(cfg)
    rows = range(len(data))
    assert manifest["pairs"] == len(data) == len(src) > 390
    assert data.src.sequences(rows) == src and data.tgt.sequences(rows) == tgt
    assert data.src.ids.dtype == np.uint16


@pytest.mark.slow
def test_several_corpora_concatenate_in_order_and_filtered_pairs_are_counted(tmp_path):
    a_src, a_tgt = write_corpus(tmp_path, "a", 30, seed=5)
    b_src, b_tgt = write_corpus(tmp_path, "b", 20, seed=6)
    with a_src.open("a") as s, a_tgt.open("a") as t:  # an empty side, a long pair, a bad ratio
        s.write("\nonly source\n" + "red " * 40 + "\nred\n")
        t.write("only target\n\n" + "RED " * 40 + "\n" + "RED " * 12 + "\n")
    cfg, tok_dir = corpus_config(
        tmp_path, train_src=[str(a_src), str(b_src)], train_tgt=[str(a_tgt), str(b_tgt)], max_len_ratio=3.0
    )
    manifests = make(cfg, tok_dir)
    src, tgt = in_memory(cfg, tok_dir)
    data = loaded(cfg)
    batch = data.batch(np.arange(len(data)))
    assert batch.src.tolist() == ParallelData.from_lists(src, tgt).batch(np.arange(len(src))).src.tolist()
    counts = manifests["train"]["counts"]
    assert (counts["read"], counts["kept"], counts["empty"]) == (34, len(src) - 20, 2)
    assert counts["too_long"] >= 1 and counts["bad_ratio"] >= 1
    assert counts["kept"] + counts["empty"] + counts["too_long"] + counts["bad_ratio"] == 34
    assert manifests["train.1"]["counts"]["read"] == manifests["train.1"]["counts"]["kept"] == 20
    toks = load_tokenizers(tok_dir, True)
    first_of_b = data.batch([len(data) - 20]).src[0, :-1].tolist()
    assert first_of_b == toks.src.encode(read_lines(b_src)[:1])[0]  # b follows a


@pytest.mark.slow
def test_every_example_exactly_once_per_epoch_from_the_mapped_arrays(tmp_path):
    cfg, tok_dir = corpus_config(tmp_path)
    make(cfg, tok_dir)
    data = loaded(cfg)
    src, tgt = in_memory(cfg, tok_dir)
    reference = ParallelData.from_lists(src, tgt)
    assert np.array_equal(data.costs(), reference.costs())  # stored at prepare time, computed here
    for epoch in range(2):
        batches = token_batches(data.costs(), 128, seed=3, epoch=epoch)
        assert Counter(int(i) for b in batches for i in b) == Counter(range(len(data)))
        for rows in batches[:5]:  # the same batches as from ids held in memory
            mapped, held = data.batch(rows), reference.batch(rows)
            assert all(
                torch.equal(getattr(mapped, k), getattr(held, k)) for k in ("src", "tgt_in", "tgt_out")
            )


def mapped_kb(directory: Path) -> int:
    """KB of this process's RSS in mappings of files under `directory` (from /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):  # a mapping's header: address range, ..., path
            inside = str(directory) in line
        elif inside and first == "Rss:":
            total += int(line.split()[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").is_file(), reason="needs Linux's /proc/self/smaps")
def test_batches_leave_no_corpus_pages_mapped(tmp_path):
    """The corpus stays in the page cache, not in the process: RSS does not grow with the corpus."""
    cfg, tok_dir = corpus_config(tmp_path)
    make(cfg, tok_dir)
    data = loaded(cfg)
    batches = token_batches(data.costs(), 128, seed=3)
    assert mapped_kb(prepared_corpus_dir(cfg)) > 0  # the costs, just read
    for rows in batches:
        data.batch(rows)
    assert mapped_kb(prepared_corpus_dir(cfg)) == 0


@pytest.mark.slow
def test_reused_while_unchanged_and_remade_when_text_tokenizer_or_filter_change(tmp_path, caplog):
    cfg, tok_dir = corpus_config(tmp_path)
    pairs = make(cfg, tok_dir)["pairs"]
    ids_file = prepared_corpus_dir(cfg) / "train" / "train.src.ids"
    made = ids_file.stat().st_ino
    caplog.set_level(logging.INFO, logger="seq2seq")
    make(cfg, tok_dir)
    assert ids_file.stat().st_ino == made and "reusing prepared corpus train" in caplog.text

    with open(cfg.data.train_src[0], "a", encoding="utf-8") as f, open(cfg.data.train_tgt[0], "a") as g:
        f.write("red cat\n")
        g.write("CAT RED\n")
    caplog.clear()
    assert make(cfg, tok_dir)["pairs"] == pairs + 1
    assert "its src file changed" in caplog.text and "its tgt file changed" in caplog.text

    caplog.clear()
    make(dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, max_len=5)), tok_dir)
    assert "data.max_len changed: 32 -> 5" in caplog.text

    (tok_dir / "spm.model").unlink()
    smaller = dataclasses.replace(cfg.tokenizer, vocab_size=50)
    train_or_load_tokenizers(smaller, cfg.data.training_corpora(), tok_dir)
    caplog.clear()
    make(cfg, tok_dir)
    assert "the tokenizer changed" in caplog.text


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "flip", "delete"])
def test_a_damaged_array_is_detected_and_remade(tmp_path, caplog, damage):
    cfg, tok_dir = corpus_config(tmp_path)
    make(cfg, tok_dir)
    directory = prepared_corpus_dir(cfg) / "train"
    path = directory / "train.tgt.ids"
    good = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(good[:-2])
    elif damage == "flip":
        path.write_bytes(good[:10] + bytes([good[10] ^ 1]) + good[11:])
    else:
        path.unlink()
    if damage != "flip":  # mapping checks sizes; checksums are compared before a run starts
        with pytest.raises(DataError, match="train.tgt.ids is missing, truncated or changed"):
            load_prepared_part(directory)
    caplog.set_level(logging.INFO, logger="seq2seq")
    make(cfg, tok_dir)
    assert "preparing corpus train" in caplog.text
    assert path.read_bytes() == good


@pytest.mark.slow
def test_an_interrupted_prepare_leaves_nothing_that_looks_valid(tmp_path, monkeypatch):
    cfg, tok_dir = corpus_config(tmp_path)
    pairs = make(cfg, tok_dir)["pairs"]
    directory = prepared_corpus_dir(cfg) / "train"
    with open(cfg.data.train_src[0], "a") as f, open(cfg.data.train_tgt[0], "a") as g:
        f.write("red cat\n")
        g.write("CAT RED\n")
    replace = os.replace
    moved = []

    def killed_after_one(src, dst):
        if moved:
            raise KeyboardInterrupt
        moved.append(dst)
        replace(src, dst)

    monkeypatch.setattr(prepare.os, "replace", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        make(cfg, tok_dir)
    monkeypatch.setattr(prepare.os, "replace", replace)
    assert not (directory / "manifest.json").exists()  # half the new arrays, half the old: no manifest
    assert [p.name for p in directory.iterdir() if p.name.startswith(".tmp")] == []
    with pytest.raises(DataError, match="no prepared corpus"):
        load_prepared_part(directory)
    assert make(cfg, tok_dir)["pairs"] == pairs + 1


@pytest.mark.slow
def test_a_directory_that_is_not_s2s_s_is_refused(tmp_path):
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    cfg, tok_dir = corpus_config(tmp_path, prepared_dir=str(other))
    with pytest.raises(DataError, match="not empty and was not made by s2s"):
        make(cfg, tok_dir)
    assert (other / "notes.txt").read_text() == "keep me"


@pytest.mark.slow
def test_the_tokenizer_sample_is_seeded_uniform_and_bounded_in_memory(tmp_path):
    path = tmp_path / "big.txt"
    lines = [f"line {i} " + "x" * 80 for i in range(250_000)]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    tracemalloc.start()
    sides = [(file_corpora([path], [path])[0], "src")]
    sample = sample_lines(sides, 500, seed=1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < path.stat().st_size / 2  # never the whole file (23 MB) at once
    assert len(sample) == 500 and len(set(sample)) == 500 and set(sample) <= set(lines)
    assert sample == sample_lines(sides, 500, seed=1)
    assert sample != sample_lines(sides, 500, seed=2)
    positions = sorted(int(line.split()[1]) for line in sample)
    assert positions[0] < 25_000 and positions[-1] > 225_000  # drawn from the whole file, not its head
    assert sample_lines(sides, 10**6, seed=1) == lines  # all of them, in order, when few
