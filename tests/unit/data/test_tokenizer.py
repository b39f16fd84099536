"""SentencePiece stage: unknown characters, byte fallback, how `<unk>` reaches the output; the pair's task."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from seq2seq.config import TokenizerConfig, config_from_dict
from seq2seq.data.corpora import file_corpora
from seq2seq.data.labels import LABELS_FILE, Labels
from seq2seq.data.parallel import load_eval_pairs
from seq2seq.data.targets import TARGETS
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import UNK, TokenizerPair, load_tokenizers, train_or_load_tokenizers
from seq2seq.errors import ConfigError, RunDirError
from seq2seq.special import PAD
from seq2seq.training.setup import check_fits_arch
from tests.conftest import tiny_config_dict, write_corpus

NOUNS = {"cat", "dog", "bird", "house", "tree"}
UNSEEN = "red Übersetzung 猫 cat"  # characters the tiny corpus never contains


def tokenizers(tmp_path: Path, **settings: object):
    src, tgt = write_corpus(tmp_path, "train", 400, seed=1)
    cfg = TokenizerConfig(**{"vocab_size": 60, **settings})
    return train_or_load_tokenizers(cfg, file_corpora([src], [tgt]), tmp_path / "tok")


@pytest.mark.slow
def test_byte_fallback_round_trips_characters_absent_from_training(tmp_path):
    tok = tokenizers(tmp_path, vocab_size=320, byte_fallback=True).src
    ids = tok.encode([UNSEEN])[0]
    assert UNK not in ids
    assert tok.decode([ids]) == [UNSEEN]


@pytest.mark.slow
def test_without_byte_fallback_unknown_characters_are_dropped_or_shown(tmp_path):
    tok = tokenizers(tmp_path).src
    ids = tok.encode([UNSEEN])[0]
    assert UNK in ids
    assert "⁇" not in tok.decode([ids])[0]
    assert "⁇" in tok.decode([ids], keep_unk=True)[0]


@pytest.mark.slow
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


# ---- the pair and its task ----------------------------------------------------------------------


def reader_corpus(directory: Path, task: str) -> tuple[Path, Path]:
    """The tiny source text with a label per line (classify: its length) or a tag per word (tag)."""
    src, _ = write_corpus(directory, "train", 200, seed=2)
    lines = read_lines(src)
    if task == "classify":
        labels = ["long" if len(line.split()) > 4 else "short" for line in lines]
    else:
        labels = [" ".join("N" if w in NOUNS else "O" for w in line.split()) for line in lines]
    tgt = directory / f"train.{task}"
    tgt.write_text("\n".join(labels) + "\n", encoding="utf-8")
    return src, tgt


def reader_tokenizers(directory: Path, task: str) -> TokenizerPair:
    src, tgt = reader_corpus(directory, task)
    cfg = TokenizerConfig(vocab_size=60)
    return train_or_load_tokenizers(cfg, file_corpora([src], [tgt]), directory / "tok", targets=TARGETS[task])


@pytest.mark.parametrize("task", ["classify", "tag"])
def test_a_pairs_task_is_what_its_label_set_says(tmp_path, task):
    made = reader_tokenizers(tmp_path, task)
    loaded = load_tokenizers(tmp_path / "tok", joint=True)
    assert (
        made.targets.task
        == loaded.targets.task
        == Labels.load(tmp_path / "tok" / LABELS_FILE).kind.task
        == task
    )
    assert loaded.labels.names == made.labels.names and loaded.labels is loaded.tgt


def test_a_translation_pair_says_translate_and_encodes_target_pieces(tmp_path):
    pair = tokenizers(tmp_path)
    assert pair.targets.task == "translate" and pair.joint
    lines = ["RED CAT", "DOG BIG"]
    assert pair.target_ids(pair.src.encode(["cat red", "big dog"]), lines) == pair.tgt.encode(lines)


def test_a_taggers_target_ids_put_each_tag_on_its_words_first_piece(tmp_path):
    pair = reader_tokenizers(tmp_path, "tag")
    lines = ["O N", "N O O"]
    sources = pair.src.encode(["big cat", "dog under house"])
    targets = pair.target_ids(sources, lines)
    assert [len(t) for t in targets] == [len(s) for s in sources]
    assert pair.labels.decode([[i for i in t if i != PAD] for t in targets]) == lines


def test_a_label_set_of_another_task_is_refused_before_training(tmp_path):
    reader_tokenizers(tmp_path, "classify")
    raw = tiny_config_dict(tmp_path)
    raw["model"] |= {"arch": "encoder_only", "task": "tag"}
    raw["train"]["best_metric"] = "accuracy"
    cfg = config_from_dict(raw)
    pair = load_tokenizers(tmp_path / "tok", joint=True)
    with pytest.raises(RunDirError, match="is for task classify, the config says model.task: tag"):
        check_fits_arch(cfg, pair)
