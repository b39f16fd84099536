"""Several corpora, as two files or one TSV, plain or compressed: the same ids, prepared per corpus;
tags as single control ids at the start of a source; every cleaning rule counted and sampled."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import numpy as np
import pytest
import zstandard

from seq2seq.config import Config, config_from_dict
from seq2seq.data.cleaning import CODE, KEEP, SeenPairs, pair_hashes
from seq2seq.data.control import control_id
from seq2seq.data.manifest import dropped_report
from seq2seq.data.prepared import ensure_prepared_corpus, load_prepared, prepared_corpus_dir
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import load_tokenizers, tokenizer_checksums, train_or_load_tokenizers
from seq2seq.errors import DataError
from seq2seq.run.checks import data_checksums
from seq2seq.special import CONTROL_PIECES
from tests.conftest import tiny_config_dict, write_corpus


def config_with(tmp_path: Path, corpora: list[dict], **data: object) -> Config:
    tmp_path.mkdir(exist_ok=True)
    raw = tiny_config_dict(tmp_path)
    del raw["data"]["train_src"], raw["data"]["train_tgt"]
    raw["data"] |= {"corpora": corpora, **data}
    raw["tokenizer"]["control_tokens"] = ["<bt>", "<crawl>"]
    return config_from_dict(raw)


def prepare(cfg: Config, tok_dir: Path, workers: int = 1) -> dict:
    if not tok_dir.is_dir():
        train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tok_dir)
    sums = tokenizer_checksums(tok_dir, cfg.tokenizer.joint)
    return ensure_prepared_corpus(cfg, tok_dir, data_checksums(cfg), sums, workers)


def all_pairs(cfg: Config) -> tuple[list[list[int]], list[list[int]]]:
    """Every prepared pair's source and target ids (without <eos>/<bos>), in corpus order."""
    data = load_prepared(prepared_corpus_dir(cfg), cfg.data.training_corpora())
    batch = data.batch(np.arange(len(data)))
    src = [[int(i) for i in row if i > 0][:-1] for row in batch.src]
    tgt = [[int(i) for i in row if i > 0][:-1] for row in batch.tgt_out]
    return src, tgt


@pytest.mark.slow
def test_compressed_tsv_and_plain_corpora_give_identical_ids(tmp_path):
    src, tgt = write_corpus(tmp_path, "a", 300, seed=3)
    lines = list(zip(read_lines(src), read_lines(tgt), strict=True))
    tsv = "".join(f"{s}\t{t}\n" for s, t in lines).encode()
    (tmp_path / "a.tsv.gz").write_bytes(gzip.compress(tsv))
    (tmp_path / "a.src.xz").write_bytes(lzma.compress(src.read_bytes()))
    (tmp_path / "a.tgt.zst").write_bytes(zstandard.ZstdCompressor().compress(tgt.read_bytes()))
    kinds = {
        "plain": {"src": str(src), "tgt": str(tgt)},
        "tsv": {"tsv": str(tmp_path / "a.tsv.gz")},
        "packed": {"src": str(tmp_path / "a.src.xz"), "tgt": str(tmp_path / "a.tgt.zst")},
    }
    tok_dir = tmp_path / "tok"
    results = []
    for kind, files in kinds.items():
        cfg = config_with(tmp_path / kind, [{"name": "a", **files}])
        prepare(cfg, tok_dir)  # one tokenizer for all three, trained on the first
        results.append(all_pairs(cfg))
    assert results[0] == results[1] == results[2]
    assert len(results[0][0]) > 290  # a few dropped by the length ratio, alike


def test_a_tsv_line_without_exactly_one_tab_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("eins\tone\nzwei two\ndrei\tthree\n", encoding="utf-8")
    cfg = config_with(tmp_path, [{"name": "bad", "tsv": str(bad)}])
    with pytest.raises(DataError, match=r"bad.tsv: line 2 has 0 tabs; a TSV corpus has exactly one"):
        prepare(cfg, tmp_path / "tok")


def test_a_tag_is_one_control_id_first_in_its_corpus_sources_only(tmp_path):
    a_src, a_tgt = write_corpus(tmp_path, "a", 50, seed=4)
    b_src, b_tgt = write_corpus(tmp_path, "b", 40, seed=5)
    cfg = config_with(
        tmp_path,
        [
            {"name": "a", "src": str(a_src), "tgt": str(a_tgt)},
            {"name": "b", "src": str(b_src), "tgt": str(b_tgt), "tag": "<bt>"},
        ],
    )
    prepare(cfg, tmp_path / "tok")
    tok = load_tokenizers(tmp_path / "tok", True).src
    bt = control_id(tok, "<bt>")
    assert bt == 4 + len(CONTROL_PIECES)  # declared after s2s's own: ids 0-5 never move
    src, _ = all_pairs(cfg)
    untagged, tagged = src[:50], src[50:]
    assert all(ids[0] == bt and bt not in ids[1:] for ids in tagged)
    assert all(bt not in ids for ids in untagged)
    assert [ids[1:] for ids in tagged] == tok.encode(read_lines(b_src))
    assert bt not in tok.encode(["the <bt> cat"])[0]  # text never makes a control token


def test_a_tag_that_is_not_declared_is_refused_at_load_time(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["data"] |= {"corpora": [{"name": "a", "src": "a", "tgt": "b", "tag": "<bt>"}]}
    del raw["data"]["train_src"], raw["data"]["train_tgt"]
    with pytest.raises(
        Exception, match=r"data.corpora\[0\].tag: <bt> is not declared in tokenizer.control_tokens"
    ):
        config_from_dict(raw)


@pytest.mark.slow
def test_each_rule_drops_exactly_its_planted_pairs_and_counts_them(tmp_path):
    clean = [("der rote hund schläft", "the red dog sleeps"), ("ein kleines haus", "the house is small")]
    planted = {
        "empty": [("", "empty source"), ("no target", "  ")],
        "copy": [("same text here", "same  text here")],
        "control_chars": [("bell \x07 here", "a bell")],
        "few_alnum": [("!!! ??? ...", "--- *** ###")],
        "wrong_language": [("ein roter ball", "un ballon rouge sur la table")],
        "duplicate": [clean[0], clean[1]],
    }
    pairs = [*clean] + [p for reason in planted for p in planted[reason]]
    (tmp_path / "c.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    rules = {"copies": True, "control_chars": True, "min_alnum": 0.5, "langid": True, "dedup": True}
    cfg = config_with(
        tmp_path,
        [{"name": "c", "tsv": str(tmp_path / "c.tsv"), "clean": rules}],
        src_lang="de",
        tgt_lang="en",
        max_len_ratio=0,
    )
    counts = prepare(cfg, tmp_path / "tok")["c"]["counts"]
    assert counts["read"] == len(pairs) and counts["kept"] == len(clean)
    assert {reason: counts[reason] for reason in planted} == {r: len(p) for r, p in planted.items()}
    codes = np.fromfile(prepared_corpus_dir(cfg) / "c" / "reasons.u8", np.uint8)  # why, line by line
    assert codes.tolist() == [KEEP] * len(clean) + [CODE[r] for r in planted for _ in planted[r]]
    report = dropped_report(prepared_corpus_dir(cfg), cfg.data.training_corpora(), 5)
    assert "line 5: same text here ||| same  text here" in report
    assert "line 9: der rote hund schläft ||| the red dog sleeps" in report  # the first repeat


def test_dedup_keeps_first_occurrences_in_bounded_memory():
    rng = np.random.default_rng(0)
    texts = [f"sentence {i}" for i in rng.integers(0, 30_000, size=50_000)]
    seen = SeenPairs(len(texts))
    kept = np.concatenate(
        [seen.add(pair_hashes(texts[i : i + 7000], texts[i : i + 7000])) for i in range(0, 50_000, 7000)]
    )
    first = {}
    for i, text in enumerate(texts):
        first.setdefault(text, i)
    assert np.flatnonzero(kept).tolist() == sorted(first.values())
    assert seen.slots.nbytes <= 32 * len(texts)  # 8 bytes a slot, at most 4 slots a pair
