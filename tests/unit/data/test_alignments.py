"""A prepared corpus's alignments: each pair's word links over its pieces (source positions after the
corpus's control tokens), in step with the pairs cleaning kept, stored with checksums, made again alone
when damaged or when the pairs change, and never when guided alignment is off.

The aligner here is the tiny corpus's true alignment (its targets are its sources' words reversed),
in place of eflomal; tests/integration/test_guided_alignment.py runs eflomal itself."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from seq2seq.align.pieces import alignment_matrix, word_of_piece
from seq2seq.config import Config, config_from_dict
from seq2seq.config.guided_alignment import GuidedAlignmentConfig
from seq2seq.data import alignments
from seq2seq.data.alignments import piece_links
from seq2seq.data.links import reference_attention
from seq2seq.data.prepared import load_prepared_part, prepared_corpus_dir
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import load_tokenizers, train_or_load_tokenizers
from seq2seq.errors import AlignmentError, DataError
from seq2seq.files import file_sha256
from tests.conftest import tiny_config_dict, write_corpus
from tests.unit.data.test_prepared import make


class TrueAligner:
    """The tiny corpus's alignment: target word j is source word n - 1 - j. Records what it is given."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []

    def __call__(self, src: Sequence[str], tgt: Sequence[str]) -> list[list[tuple[int, int]]]:
        self.calls.append((list(src), list(tgt)))
        found = []
        for s, t in zip(src, tgt, strict=True):
            words = s.split()
            assert t.split() == [w.upper() for w in reversed(words)], (s, t)  # the pairs are in step
            found.append([(i, len(words) - 1 - i) for i in range(len(words))])
        return found


@pytest.fixture
def aligner(monkeypatch: pytest.MonkeyPatch) -> TrueAligner:
    fake = TrueAligner()
    monkeypatch.setattr(alignments, "align_words", fake)
    return fake


def guided(cfg: Config, weight: float = 0.1) -> Config:
    return dataclasses.replace(
        cfg, train=dataclasses.replace(cfg.train, guided_alignment=GuidedAlignmentConfig(weight=weight))
    )


def config(tmp_path: Path, tag: str = "", **data: object) -> tuple[Config, Path]:
    """The tiny config with guided alignment, its corpus tagged with `tag` when given (the tokenizer
    always declares `<bt>`), and a tokenizer trained for it in tmp_path/tok."""
    raw = tiny_config_dict(tmp_path, guided_alignment={"weight": 0.1})
    raw["data"] |= data
    raw["tokenizer"]["control_tokens"] = ["<bt>"]
    if tag:
        corpus = {"name": "train", "src": raw["data"].pop("train_src"), "tgt": raw["data"].pop("train_tgt")}
        raw["data"]["corpora"] = [corpus | {"tag": tag}]
    cfg = config_from_dict(raw)
    train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tmp_path / "tok")
    return cfg, tmp_path / "tok"


def test_each_pair_gets_its_word_links_over_its_pieces_stored_with_checksums(tmp_path, aligner):
    cfg, tok_dir = config(tmp_path)
    manifest = make(cfg, tok_dir)
    directory = prepared_corpus_dir(cfg) / "train"
    for name, info in manifest["alignments"]["arrays"].items():
        path = directory / f"train.{name}"
        assert (path.stat().st_size, file_sha256(path)) == (info["bytes"], info["sha256"])
    assert manifest["alignments"]["counts"] == {
        "linked": manifest["pairs"],
        "links": len(load_prepared_part(directory, links=True).links.pairs),  # type: ignore[union-attr]
        "unmatched": 0,
    }
    data, pieces = load_prepared_part(directory, links=True), load_tokenizers(tok_dir, True).src
    src_lines, tgt_lines = aligner.calls[0]
    for n in range(0, len(data), 37):
        batch = data.batch([n])
        assert batch.links is not None
        reference = reference_attention(batch.links, (1, *batch.tgt_out.shape[1:], batch.src.shape[1]))[0]
        src_words = word_of_piece(pieces.pieces(src_lines[n]))  # from the text, not the stored ids
        tgt_words = word_of_piece(pieces.pieces(tgt_lines[n]))
        truth = [(i, len(set(src_words)) - 1 - i) for i in range(len(set(src_words)))]
        expected = alignment_matrix(truth, src_words, tgt_words, shape=tuple(reference.shape))
        assert np.array_equal(reference.numpy(), expected), n


def test_a_tag_shifts_every_source_position_by_one(tmp_path, aligner):
    cfg, tok_dir = config(tmp_path)
    tagged, _ = config(tmp_path, tag="<bt>")
    tagged = dataclasses.replace(tagged, run_dir=str(tmp_path / "tagged"))
    make(cfg, tok_dir)
    make(tagged, tok_dir)
    plain = load_prepared_part(prepared_corpus_dir(cfg) / "train", links=True).links
    shifted = load_prepared_part(prepared_corpus_dir(tagged) / "train", links=True).links
    assert plain is not None and shifted is not None and len(plain.pairs) > 0
    assert np.array_equal(plain.offsets, shifted.offsets)
    assert np.array_equal(plain.pairs[:, 0], shifted.pairs[:, 0])
    assert np.array_equal(plain.pairs[:, 1] + 1, shifted.pairs[:, 1])


def test_the_aligned_text_is_the_kept_pairs_in_step_with_the_rows(tmp_path, aligner):
    src, tgt = write_corpus(tmp_path, "mixed", 60, seed=4)
    sources, targets = read_lines(src), read_lines(tgt)
    sources[5:5], targets[5:5] = ["only source", "red " * 40], ["", "RED " * 40]  # dropped: empty, long
    src.write_text("\n".join(sources) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(targets) + "\n", encoding="utf-8")
    cfg, tok_dir = config(tmp_path, train_src=str(src), train_tgt=str(tgt))
    manifest = make(cfg, tok_dir)
    assert manifest["counts"]["read"] - manifest["pairs"] == 2
    ((aligned_src, aligned_tgt),) = aligner.calls  # the aligner checked each pair is its own
    assert aligned_src == sources[:5] + sources[7:] and aligned_tgt == targets[:5] + targets[7:]


def test_made_only_when_on_then_reused_and_made_again_alone_when_the_pairs_change(tmp_path, aligner, caplog):
    cfg, tok_dir = config(tmp_path)
    directory = prepared_corpus_dir(cfg) / "train"
    assert "alignments" not in make(guided(cfg, 0.0), tok_dir) and not aligner.calls
    assert not list(directory.glob("train.align.*"))
    ids = (directory / "train.src.ids").stat().st_ino
    caplog.set_level(logging.INFO, logger="seq2seq")
    assert "alignments" in make(cfg, tok_dir)
    assert "reusing prepared corpus train" in caplog.text and "no word alignments there yet" in caplog.text
    assert (directory / "train.src.ids").stat().st_ino == ids and len(aligner.calls) == 1  # not encoded again
    caplog.clear()
    make(cfg, tok_dir)
    make(guided(cfg, 0.0), tok_dir)
    assert "reusing the word alignments of corpus train" in caplog.text and len(aligner.calls) == 1
    with open(cfg.data.train_src[0], "a") as f, open(cfg.data.train_tgt[0], "a") as g:
        f.write("red cat\n")
        g.write("CAT RED\n")
    manifest = make(cfg, tok_dir)
    assert len(aligner.calls) == 2 and len(aligner.calls[1][0]) == manifest["pairs"]
    assert len(load_prepared_part(directory, links=True).links or []) == manifest["pairs"]


@pytest.mark.parametrize(
    "damage", ["truncate pairs", "flip pairs", "delete offsets", "flip offsets", "edit record", "edit ids"]
)
def test_damaged_alignments_are_detected_and_made_again_alone(tmp_path, aligner, caplog, damage):
    cfg, tok_dir = config(tmp_path)
    make(cfg, tok_dir)
    directory = prepared_corpus_dir(cfg) / "train"
    what, name = damage.split()
    path = directory / ("manifest.json" if what == "edit" else f"train.align.{name}")
    good, ids = path.read_bytes(), (directory / "train.src.ids").stat().st_ino
    if what == "truncate":
        path.write_bytes(good[:-2])
    elif what == "flip":
        path.write_bytes(good[:9] + bytes([good[9] ^ 1]) + good[10:])
    elif what == "delete":
        path.unlink()
    else:
        manifest = json.loads(good)
        if name == "record":
            del manifest["alignments"]["counts"]
        else:  # as if the pairs had been encoded again since
            manifest["alignments"]["made_from"]["ids"]["src.ids"] = "0" * 64
        path.write_text(json.dumps(manifest))
    if what in ("truncate", "delete"):  # mapping checks sizes; checksums are compared before a run starts
        with pytest.raises(DataError, match="missing or truncated"):
            load_prepared_part(directory, links=True)
    caplog.set_level(logging.INFO, logger="seq2seq")
    make(cfg, tok_dir)
    assert "word-aligning corpus train" in caplog.text and len(aligner.calls) == 2
    assert (directory / "train.src.ids").stat().st_ino == ids
    if what != "edit":
        assert path.read_bytes() == good  # the true aligner is deterministic


def test_an_aligner_that_fails_is_an_alignment_error_and_leaves_the_pairs_usable(tmp_path, monkeypatch):
    def broken(src: Sequence[str], tgt: Sequence[str]) -> list:
        raise AlignmentError("eflomal failed while aligning 400 sentence pairs: out of memory")

    monkeypatch.setattr(alignments, "align_words", broken)
    cfg, tok_dir = config(tmp_path)
    with pytest.raises(AlignmentError, match="eflomal failed"):
        make(cfg, tok_dir)
    manifest = make(guided(cfg, 0.0), tok_dir)
    assert "alignments" not in manifest and len(load_prepared_part(prepared_corpus_dir(cfg) / "train")) > 0


def test_a_pair_whose_pieces_make_other_words_than_its_text_gets_no_links(tmp_path, aligner):
    cfg, tok_dir = config(tmp_path)
    make(cfg, tok_dir)
    data = load_prepared_part(prepared_corpus_dir(cfg) / "train")
    ((src, tgt),) = aligner.calls
    words = TrueAligner()(src, tgt)
    src[1] += " extra"  # the text has a word the stored pieces do not
    tokenizer = load_tokenizers(tok_dir, True).src
    links, unmatched = piece_links(words, src, tgt, data, 0, (tokenizer, tokenizer))
    assert unmatched == 1 and links.offsets[2] == links.offsets[1] and links.offsets[1] > 0
