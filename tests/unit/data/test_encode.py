"""Encoding a corpus into flat id arrays: a reader's targets become label ids, decided by its pair's task."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

import seq2seq
from seq2seq.config import TokenizerConfig
from seq2seq.config.data import CleanConfig
from seq2seq.data.corpora import file_corpora
from seq2seq.data.encode import Rules, encode_corpus
from seq2seq.data.targets import TARGETS
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import load_tokenizers, train_or_load_tokenizers
from tests.conftest import write_corpus

NOUNS = {"cat", "dog", "bird", "house", "tree"}


def tagged_corpus(directory: Path) -> tuple[Path, Path]:
    """The tiny source text with one tag per word: N for a noun, O for the rest."""
    src, _ = write_corpus(directory, "train", 200, seed=2)
    tags = [" ".join("N" if w in NOUNS else "O" for w in line.split()) for line in read_lines(src)]
    tgt = directory / "train.tags"
    tgt.write_text("\n".join(tags) + "\n", encoding="utf-8")
    return src, tgt


def test_a_readers_corpus_encodes_to_label_ids_that_are_not_counted_as_pieces(tmp_path):
    src, tgt = tagged_corpus(tmp_path)
    tok_dir, out = tmp_path / "tok", tmp_path / "out"
    train_or_load_tokenizers(
        TokenizerConfig(vocab_size=60), file_corpora([src], [tgt]), tok_dir, targets=TARGETS["tag"]
    )
    out.mkdir()
    (files,) = file_corpora([src], [tgt])
    corpus = encode_corpus(
        files, 200, tok_dir, True, Rules((64, 0.0), CleanConfig(), ("", "")), out, workers=1
    )
    pair = load_tokenizers(tok_dir, joint=True)
    expected = pair.target_ids(pair.src.encode(read_lines(src)), read_lines(tgt))
    ids = np.fromfile(out / "train.tgt.ids", dtype=np.dtype(corpus.arrays["tgt.ids"]["dtype"]))
    assert ids.tolist() == [i for seq in expected for i in seq]
    # label id 1 is the tag "N", the id <unk> has among pieces: counting it would report unknown text
    assert pair.labels.names[0] == "N" and 1 in ids
    assert corpus.stats["tgt"]["unk_share"] == 0


def test_nothing_in_the_package_probes_the_target_sides_type():
    """The targets are the pair's `targets`, decided when it is loaded; no code asks `tgt` what it is."""
    probes = []
    for path in Path(seq2seq.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            args = [ast.unparse(a) for a in node.args[1:]]
            if (node.func.id == "isinstance" and {"Labels", "Tokenizer"} & set(args)) or (
                node.func.id in {"getattr", "hasattr"} and "'task'" in args
            ):
                probes.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert probes == []
