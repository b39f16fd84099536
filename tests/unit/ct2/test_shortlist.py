"""The lexical shortlist of a CTranslate2 export: what it counts, what it writes, and what decoding
with it may output."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import seq2seq.ct2.shortlist as shortlist_module
from seq2seq.ct2.shortlist import VMAP_FILE, Shortlist, build_shortlist, write_vmap
from seq2seq.data.parallel import ParallelData
from seq2seq.data.textio import read_lines
from seq2seq.data.token_arrays import TokenArrays
from seq2seq.decoding.settings import SearchSettings
from seq2seq.run.layout import RunDir
from seq2seq.translate.placement import Placement
from tests.conftest import TrainedRun
from tests.helpers import cli_translate, run_cli

SRC_VOCAB, TGT_VOCAB = 9, 7


def random_corpus(pairs: int, seed: int) -> ParallelData:
    rng = random.Random(seed)
    src = [[rng.randrange(SRC_VOCAB) for _ in range(rng.randrange(0, 6))] for _ in range(pairs)]
    tgt = [[rng.randrange(TGT_VOCAB) for _ in range(rng.randrange(0, 6))] for _ in range(pairs)]
    return ParallelData(TokenArrays.from_lists(src), TokenArrays.from_lists(tgt))


def reference_shortlist(corpora: list[ParallelData], per_source: int, common: int) -> Shortlist:
    """The definition, one pair at a time: Dice of the pairs each piece occurs in, best first (ties:
    the lower target id first); the most frequent target pieces (ties: the lower id first)."""
    pairs = [
        (set(c.src.sequences([i])[0]), set(c.tgt.sequences([i])[0]))
        for c in corpora
        for i in range(len(c.src))
    ]
    src_count = {s: sum(s in p[0] for p in pairs) for s in range(SRC_VOCAB)}
    tgt_count = {t: sum(t in p[1] for p in pairs) for t in range(TGT_VOCAB)}
    candidates = {}
    for s in range(SRC_VOCAB):
        both = {t: sum(s in a and t in b for a, b in pairs) for t in range(TGT_VOCAB)}
        met = [t for t in range(TGT_VOCAB) if both[t]]
        if met:
            dice = {t: 2 * both[t] / (src_count[s] + tgt_count[t]) for t in met}
            candidates[s] = np.array(sorted(met, key=lambda t: (-dice[t], t))[:per_source])
    frequent = sorted((t for t in range(TGT_VOCAB) if tgt_count[t]), key=lambda t: (-tgt_count[t], t))
    return Shortlist(np.array(frequent[:common]), candidates, len(pairs))


@pytest.mark.parametrize("chunk", [3, 1000])  # counted in many chunks, merged; or at once
@pytest.mark.parametrize("seed", [0, 1])
def test_the_shortlist_is_each_source_piece_s_best_target_pieces_by_dice(monkeypatch, chunk, seed):
    monkeypatch.setattr(shortlist_module, "CHUNK", chunk)
    corpora = [random_corpus(23, seed), random_corpus(11, seed + 10)]
    found = build_shortlist(corpora, SRC_VOCAB, TGT_VOCAB, per_source=3, common=4)
    expected = reference_shortlist(corpora, per_source=3, common=4)
    assert found.pairs == expected.pairs == 34
    assert found.common.tolist() == expected.common.tolist()
    assert found.candidates.keys() == expected.candidates.keys()
    for s, best in expected.candidates.items():
        assert found.candidates[s].tolist() == best.tolist(), s


def test_a_corpus_without_pairs_gives_an_empty_shortlist():
    empty = ParallelData(TokenArrays.from_lists([]), TokenArrays.from_lists([]))
    found = build_shortlist([empty], SRC_VOCAB, TGT_VOCAB, per_source=3, common=4)
    assert found.candidates == {} and found.common.tolist() == [] and found.pairs == 0


def test_a_large_corpus_is_counted_from_an_even_spread_of_its_pairs():
    corpora = [random_corpus(40, 0), random_corpus(60, 1)]
    found = build_shortlist(corpora, SRC_VOCAB, TGT_VOCAB, per_source=3, common=4, most_pairs=25)
    assert 20 <= found.pairs <= 25


def test_the_vocabulary_map_lists_common_pieces_then_each_source_piece_s_candidates_and_itself(tmp_path):
    src_pieces = ["<blank>", "▁Hund", "▁Max", "a b", "▁rot"]
    tgt_pieces = ["<blank>", "▁dog", "▁Max", "▁red", "x y"]
    shortlist = Shortlist(
        np.array([1, 4]), {1: np.array([1, 3]), 2: np.array([1]), 3: np.array([1]), 4: np.array([4, 3])}, 5
    )
    path = tmp_path / VMAP_FILE
    write_vmap(path, shortlist, src_pieces, tgt_pieces)
    assert path.read_text(encoding="utf-8").split("\n") == [
        "\t▁dog",  # "x y" holds a space: CTranslate2's format cannot hold it
        "▁Hund\t▁dog ▁red",
        "▁Max\t▁dog ▁Max",  # a piece the target vocabulary has is its own candidate (names, numbers)
        "▁rot\t▁red",
        "",
    ]


ctranslate2 = pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
from seq2seq.ct2.export_dir import ExportError, vocabulary  # noqa: E402
from seq2seq.ct2.runtime import CT2Translator  # noqa: E402


@pytest.fixture(scope="module")
def confident(trained_run: Callable[[str], TrainedRun]) -> TrainedRun:
    return trained_run("confident")


def export(run: Path, out: Path, *args: str) -> Path:
    result = run_cli("export", str(run), str(out), *args)
    assert result.exit_code == 0, result.output
    return out


def test_a_shortlist_that_leaves_nothing_out_translates_as_the_export_without_one(confident, tmp_path):
    everything = str(RunDir(confident.run).load_config().tokenizer.vocab_size)  # every target piece
    full = export(confident.run, tmp_path / "full", "--shortlist", everything, "--shortlist-common", "10000")
    plain = export(confident.run, tmp_path / "plain")
    lines = read_lines(confident.data / "valid.src")
    assert (full / VMAP_FILE).is_file() and not (plain / VMAP_FILE).exists()
    theirs = cli_translate(plain, lines, "--engine", "ctranslate2", "--beam", "1")
    assert cli_translate(full, lines, "--engine", "ctranslate2", "--beam", "1") == theirs and any(theirs)


def test_decoding_with_a_shortlist_outputs_only_the_candidates_of_its_sources(confident, tmp_path):
    out = export(confident.run, tmp_path / "short", "--shortlist", "1", "--shortlist-common", "0")
    info = json.loads((out / "s2s.json").read_text(encoding="utf-8"))
    assert info["shortlist"]["per_source"] == 1 and info["shortlist"]["pairs_counted"] > 0
    rules = dict(line.split("\t") for line in (out / VMAP_FILE).read_text(encoding="utf-8").splitlines())
    translator = CT2Translator.load(out, Placement("cpu"))
    pieces = vocabulary(translator.tokenizers.tgt)
    outputs = 0
    for line in read_lines(confident.data / "valid.src")[:8]:  # one line per call: a batch of one
        source = translator.tokenizers.src.sp.encode(line, out_type=str)
        allowed = {"<unk>"} | {piece for s in source for piece in rules.get(s, "").split()}
        (best, *_), *_ = translator.search([source], SearchSettings(beam=2), 1000)
        assert {pieces[i] for i in best.tokens} <= allowed, (line, allowed)
        outputs += len(best.tokens)
    assert outputs > 0


def test_a_shortlist_needs_the_run_s_prepared_pairs_and_a_refused_export_leaves_nothing(confident, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(confident.run, run)
    shutil.rmtree(run / "prepared")
    result = run_cli("export", str(run), str(tmp_path / "out"), "--shortlist", "20")
    assert result.exit_code == 2 and "s2s prepare" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))
    result = run_cli(
        "export", str(confident.run), str(tmp_path / "hf"), "--format", "huggingface", "--shortlist", "20"
    )
    assert result.exit_code == 2 and "--shortlist is for --format ctranslate2" in result.output


def test_the_engine_decodes_with_a_shortlist_as_the_export_s_record_says(confident, tmp_path):
    """Also an export made before s2s recorded its files' sha256: its record's shortlist is used, and
    its vmap.txt then needed; a vmap.txt its record does not name is not used."""
    out = export(confident.run, tmp_path / "short", "--shortlist", "1")
    info = json.loads((out / "s2s.json").read_text(encoding="utf-8"))
    del info["files"]
    (out / "s2s.json").write_text(json.dumps(info), encoding="utf-8")
    assert CT2Translator.load(out, Placement("cpu")).shortlist
    (out / VMAP_FILE).rename(tmp_path / VMAP_FILE)
    with pytest.raises(ExportError, match=f"{VMAP_FILE} is missing"):
        CT2Translator.load(out, Placement("cpu"))
    (tmp_path / VMAP_FILE).rename(out / VMAP_FILE)
    (out / "s2s.json").write_text(json.dumps(info | {"shortlist": None}), encoding="utf-8")
    assert not CT2Translator.load(out, Placement("cpu")).shortlist
