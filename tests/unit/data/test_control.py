"""Control tokens: declared pieces after s2s's own ids, one id each, in a fixed order at the start of a
source; a run that declares none gets exactly the tokenizer (so the ids) an older s2s made."""

from __future__ import annotations

from collections import Counter

import pytest

from seq2seq.config import TokenizerConfig
from seq2seq.config.data import CorpusConfig
from seq2seq.data.control import control_id, declared_tokens, source_prefix
from seq2seq.data.corpora import file_corpora
from seq2seq.data.tokenizer import Tokenizer, train_or_load_tokenizers
from seq2seq.data.tokenizer_sample import sample_lines
from seq2seq.errors import DataError
from tests.conftest import ROOT, write_corpus

FIXTURE = ROOT / "tests" / "fixtures" / "run_v0"  # made by an s2s before control tokens existed


def fixture_tokenizer(directory, control_tokens=()) -> Tokenizer:
    cfg = TokenizerConfig(vocab_size=60, control_tokens=tuple(control_tokens))
    corpora = file_corpora([FIXTURE / "data" / "train.src"], [FIXTURE / "data" / "train.tgt"])
    return train_or_load_tokenizers(cfg, corpora, directory).src


def test_declaring_no_control_token_trains_the_tokenizer_an_older_s2s_trained(tmp_path):
    """The same pieces, in the same order, so the same ids for every line (the model file's bytes
    differ in the training options it records)."""
    new, old = fixture_tokenizer(tmp_path / "tok"), Tokenizer(FIXTURE / "run/tokenizer/spm.model")
    assert [new.sp.id_to_piece(i) for i in range(new.vocab_size)] == [
        old.sp.id_to_piece(i) for i in range(old.vocab_size)
    ]
    for side in ("src", "tgt"):
        lines = (FIXTURE / "data" / f"train.{side}").read_text(encoding="utf-8").splitlines()
        assert new.encode(lines) == old.encode(lines)


def test_declared_tokens_follow_s2s_s_own_and_come_first_language_then_tag(tmp_path):
    old = Tokenizer(FIXTURE / "run/tokenizer/spm.model")
    tok = fixture_tokenizer(tmp_path / "tok", ["<2en>", "<bt>"])
    assert [tok.sp.id_to_piece(i) for i in range(8)] == [old.sp.id_to_piece(i) for i in range(6)] + [
        "<2en>",
        "<bt>",
    ]
    assert declared_tokens(tok) == ["<2en>", "<bt>"]
    assert source_prefix(tok, language="<2en>", tag="<bt>") == (6, 7)
    assert source_prefix(tok, tag="<bt>") == (7,) and source_prefix(tok) == ()
    assert not {6, 7} & set(tok.encode(["<bt> the <2en> cat"])[0])  # text never makes one
    with pytest.raises(
        DataError, match=r"<crawl> is not a control token .* \(its control tokens: <2en>, <bt>\)"
    ):
        control_id(tok, "<crawl>")


def test_the_tokenizer_sample_follows_size_times_weight(tmp_path):
    a, _ = write_corpus(tmp_path, "a", 1000, seed=1)
    b, _ = write_corpus(tmp_path, "b", 1000, seed=2)
    (tmp_path / "a.tagged").write_text("".join(f"A {line}" for line in a.open()), encoding="utf-8")
    (tmp_path / "b.tagged").write_text("".join(f"B {line}" for line in b.open()), encoding="utf-8")
    sides = [
        (
            CorpusConfig(name="a", src=str(tmp_path / "a.tagged"), tgt=str(tmp_path / "a.tagged"), weight=3),
            "src",
        ),
        (
            CorpusConfig(
                name="b", src=str(tmp_path / "b.tagged"), tgt=str(tmp_path / "b.tagged"), weight=0.5
            ),
            "src",
        ),
    ]
    counts = Counter(line[0] for line in sample_lines(sides, 10**6))  # room for all: A x3, B x0.5
    assert counts["A"] == 3000 and abs(counts["B"] - 500) < 80
    capped = Counter(line[0] for line in sample_lines(sides, 700))  # 3,500 weighted lines -> 700
    assert abs(capped["A"] - 600) < 90 and abs(capped["B"] - 100) < 40
