"""SentencePiece stage: unknown characters, byte fallback, and how `<unk>` reaches the output."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from seq2seq.config import TokenizerConfig, config_from_dict
from seq2seq.data.parallel import load_eval_pairs
from seq2seq.data.tokenizer import UNK, prepare_tokenizers
from seq2seq.errors import ConfigError
from tests.conftest import tiny_config_dict, write_corpus

UNSEEN = "red Übersetzung 猫 cat"  # characters the tiny corpus never contains


def tokenizers(tmp_path: Path, **settings: object):
    src, tgt = write_corpus(tmp_path, "train", 400, seed=1)
    cfg = TokenizerConfig(**{"vocab_size": 60, **settings})
    return prepare_tokenizers(cfg, [src], [tgt], tmp_path / "tok")


def test_byte_fallback_round_trips_characters_absent_from_training(tmp_path):
    tok = tokenizers(tmp_path, vocab_size=320, byte_fallback=True).src
    ids = tok.encode([UNSEEN])[0]
    assert UNK not in ids
    assert tok.decode([ids]) == [UNSEEN]


def test_without_byte_fallback_unknown_characters_are_dropped_or_shown(tmp_path):
    tok = tokenizers(tmp_path).src
    ids = tok.encode([UNSEEN])[0]
    assert UNK in ids
    assert "⁇" not in tok.decode([ids])[0]
    assert "⁇" in tok.decode([ids], keep_unk=True)[0]


def test_unknown_pieces_are_counted_in_the_log(tmp_path, caplog):
    pair = tokenizers(tmp_path)
    src, tgt = tmp_path / "v.src", tmp_path / "v.tgt"
    src.write_text(f"{UNSEEN}\nred cat\n")
    tgt.write_text("CAT RED\nCAT RED\n")
    with caplog.at_level(logging.WARNING):
        load_eval_pairs(pair, src, tgt, 32)
    assert "validation source:" in caplog.text and "are <unk>" in caplog.text
    assert "validation target" not in caplog.text


def test_byte_fallback_needs_room_for_the_byte_pieces(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["tokenizer"] |= {"byte_fallback": True, "vocab_size": 200}
    with pytest.raises(ConfigError, match="byte_fallback needs more than 260"):
        config_from_dict(raw)
