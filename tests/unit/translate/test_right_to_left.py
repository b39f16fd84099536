"""A right-to-left run (model.right_to_left) is trained on each target written last piece first, and
meets text in reading order everywhere else: its translations read forwards, a given target is scored
as the model writes it, and its attention rows follow the pieces as read. It reranks a left-to-right
run's beam in the same direction, and what cannot give its output in reading order (CTranslate2,
Hugging Face, a target prefix) refuses it before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from seq2seq.config import Config, config_from_dict
from seq2seq.data.parallel import ParallelData
from seq2seq.data.targets import RIGHT_TO_LEFT, TRANSLATION
from seq2seq.data.token_arrays import TokenArrays
from seq2seq.data.tokenizer import load_tokenizers
from seq2seq.decoding.settings import SearchSettings
from seq2seq.errors import ConfigError, Seq2SeqError
from seq2seq.run.layout import RunDir
from seq2seq.run.parts import check_reranker
from seq2seq.special import BOS, EOS, PAD
from seq2seq.translate.options import DecodeOverrides, rerank_weight_of
from seq2seq.translate.request import Request
from seq2seq.translate.scoring import score_pairs
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun, tiny_config_dict
from tests.helpers import run_cli


@pytest.fixture
def r2l_run(trained_run) -> TrainedRun:
    """The shared right-to-left run (read-only)."""
    return trained_run("right_to_left")


def test_a_batch_holds_each_target_last_piece_first_and_the_corpus_keeps_reading_order():
    rng = np.random.default_rng(0)
    targets = [rng.integers(4, 50, rng.integers(0, 9)).tolist() for _ in range(40)]
    sources = [[5] * 3 for _ in targets]
    forward = ParallelData.from_lists(sources, targets, TRANSLATION)
    backward = ParallelData.from_lists(sources, targets, RIGHT_TO_LEFT)
    rows = rng.permutation(len(targets))[:16]
    ahead, behind = forward.batch(rows), backward.batch(rows)
    assert np.array_equal(behind.src, ahead.src) and behind.num_tgt_tokens == ahead.num_tgt_tokens
    for i, row in enumerate(rows):
        written = targets[row][::-1]
        pad = [PAD] * (behind.tgt_in.size(1) - len(written) - 1)
        assert behind.tgt_in[i].tolist() == [BOS, *written, *pad]
        assert behind.tgt_out[i].tolist() == [*written, EOS, *pad]
    assert backward.tgt.sequences(rows) == forward.tgt.sequences(rows)  # stored as read


def test_reversing_a_padded_layout_twice_gives_it_back():
    arrays = TokenArrays.from_lists([[4, 5, 6], [], [7], [8, 9]])
    rows = np.arange(4)
    once = arrays.padded(rows, None, None, reverse=True)
    again = TokenArrays.from_lists([[i for i in row if i != PAD] for row in once.tolist()])
    assert np.array_equal(again.padded(rows, None, None, reverse=True), arrays.padded(rows, None, None))


def test_text_meets_the_model_in_its_order(tiny_run):
    run = tiny_run.run
    ahead, behind = load_tokenizers(run / "tokenizer", True), load_tokenizers(run / "tokenizer", True, True)
    lines = ["ein Hund läuft", "", "zwei Katzen"]
    read = ahead.tgt.encode(lines)
    assert behind.encode_written(lines) == [ids[::-1] for ids in read]
    assert ahead.encode_written(lines) == read
    assert behind.decode_written(behind.encode_written(lines)) == ahead.decode_written(read)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": {"arch": "decoder_only", "max_positions": 72}}, "model.right_to_left: only for"),
        ({"train": {"guided_alignment": {"weight": 0.1}}}, "alignments link words in reading order"),
    ],
)
def test_what_cannot_write_right_to_left_is_refused_in_the_config(tmp_path, changes, message):
    raw = tiny_config_dict(tmp_path)
    raw["model"]["right_to_left"] = True
    for section, values in changes.items():
        raw[section] = {**raw[section], **values}
    with pytest.raises(ConfigError, match=message):
        config_from_dict(raw)


def test_its_translation_reads_forwards_and_scores_as_the_search_scored_it(r2l_run):
    translator = Translator.load(r2l_run.run)
    lines = [line for line in (r2l_run.data / "valid.src").read_text(encoding="utf-8").splitlines()][:6]
    settings = SearchSettings(beam=3, length_penalty=0.0)  # a hypothesis' score is its log-probability
    found = translator.translate(lines, Request(settings, 1000))
    sources = [translator.tokenizers.src.encode([line])[0] for line in lines]
    searched = translator.search_ids(sources, settings, 1000, True, None)
    tokenizer = translator.tokenizers.tgt_tokenizer
    for translation, hyps in zip(found, searched, strict=True):
        assert translation.texts[0] == tokenizer.decode([hyps[0].tokens[::-1]])[0]  # put back in order
    scored = score_pairs(translator, lines, [t.texts[0] for t in found], 1000)
    compared = 0
    for translation, hyps, pair in zip(found, searched, scored, strict=True):
        if tokenizer.encode([translation.texts[0]])[0] == hyps[0].tokens[::-1]:  # text gives the ids back
            assert pair.total == pytest.approx(hyps[0].score, abs=1e-4)
            compared += 1
    assert compared >= len(lines) // 2


def test_its_attention_rows_follow_the_pieces_as_read(r2l_run, monkeypatch):
    translator = Translator.load(r2l_run.run)
    hypothesis = "zwei Hunde laufen"
    ids = translator.tokenizers.tgt_tokenizer.encode([hypothesis])[0]
    asked = []

    class Rows:  # row t holds the piece the model read at t, to see where each row goes
        def weights(self, model, src, tgt_in):
            asked.append(tgt_in[0].tolist())
            return tgt_in.float()[:, :, None].expand(-1, -1, src.size(1))

    monkeypatch.setattr(translator, "alignment", Rows())
    found = translator.attention_map("ein Hund", hypothesis, Request(SearchSettings(), 100))
    assert asked == [[BOS, *ids[::-1]]]  # teacher-forced as the model writes
    # reading piece i was predicted where the model had read up to piece i + 1 (or <bos> for the last)
    assert found.weights[:, 0].tolist() == [*ids[1:], BOS, ids[0]]


def test_a_reranker_going_the_wrong_way_is_refused(tmp_path):
    raw = tiny_config_dict(tmp_path)

    def run(src: str, tgt: str, right_to_left: bool) -> Config:
        return config_from_dict(
            {
                **raw,
                "data": {**raw["data"], "src_lang": src, "tgt_lang": tgt},
                "model": {**raw["model"], "right_to_left": right_to_left},
            }
        )

    forward = run("de", "en", False)
    check_reranker(forward, run("en", "de", False), "R")  # the noisy channel
    check_reranker(forward, run("de", "en", True), "B")  # right to left
    check_reranker(forward, run("", "", True), "U")  # a run that names no languages is taken at its word
    for name, (src, tgt, backwards) in {"same": ("de", "en", False), "r2l_back": ("en", "de", True)}.items():
        with pytest.raises(Seq2SeqError, match=f"--rerank {name} "):
            check_reranker(forward, run(src, tgt, backwards), name)


def test_what_writes_left_to_right_refuses_it_before_writing(r2l_run, tmp_path):
    run, src = str(r2l_run.run), str(r2l_run.data / "valid.src")
    prefix = tmp_path / "prefix.txt"
    prefix.write_text("".join("a\n" for _ in Path(src).read_text(encoding="utf-8").splitlines()))
    cases = {
        "ct2": ["export", run, str(tmp_path / "ct2")],
        "hf": ["export", run, str(tmp_path / "hf"), "--format", "huggingface"],
        "engine": ["translate", run, "-i", src, "-o", str(tmp_path / "e.txt"), "--engine", "ctranslate2"],
        "prefix": ["translate", run, "-i", src, "-o", str(tmp_path / "p.txt"), "--prefix", str(prefix)],
    }
    for name, args in cases.items():
        result = run_cli(*args)
        assert result.exit_code == 2, (name, result.output)
        assert (
            "error:" in result.output
            and "right-to-left" in result.output
            and "Traceback" not in result.output
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prefix.txt"]


def test_translate_chooses_its_own_decoder_and_reranks_with_it(r2l_run, tiny_run, tmp_path):
    src, out = r2l_run.data / "valid.src", tmp_path / "out.txt"
    result = run_cli("translate", str(r2l_run.run), "-i", str(src), "-o", str(out), "--beam", "2")
    assert result.exit_code == 0, result.output
    count = len(src.read_text(encoding="utf-8").splitlines())
    assert len(out.read_text(encoding="utf-8").splitlines()) == count
    reranked = tmp_path / "reranked.txt"
    args = ["-i", str(src), "-o", str(reranked), "--beam", "3", "--rerank", str(r2l_run.run)]
    result = run_cli("translate", str(tiny_run.run), *args)
    assert result.exit_code == 0, result.output
    assert len(reranked.read_text(encoding="utf-8").splitlines()) == count
    assert yaml.safe_load((r2l_run.run / "config.yaml").read_text())["model"]["right_to_left"] is True


def test_its_weight_by_default_is_a_right_to_left_runs_and_a_given_one_stays(r2l_run, tiny_run, tmp_path):
    def weights(*runs: TrainedRun, given: tuple[float, ...] = ()) -> tuple[float, ...]:
        asked = DecodeOverrides(rerank=tuple(str(r.run) for r in runs), rerank_weight=given)
        configs = [RunDir(r.run).load_config() for r in runs]
        return rerank_weight_of(asked, configs).rerank_weight

    assert weights(r2l_run) == (3.0,) and weights(tiny_run) == (0.2,)  # a reverse run's
    assert weights(tiny_run, r2l_run) == (0.2, 3.0)  # each run's own
    assert weights(r2l_run, given=(0.5,)) == (0.5,) and weights() == ()
    report = tmp_path / "val.json"
    src, ref = tiny_run.data / "valid.src", tiny_run.data / "valid.tgt"
    args = ["--src", str(src), "--ref", str(ref), "--out", str(tmp_path / "hyp.txt"), "--json", str(report)]
    result = run_cli("evaluate", str(tiny_run.run), *args, "--beam", "2", "--rerank", str(r2l_run.run))
    assert result.exit_code == 0, result.output
    decode = json.loads(report.read_text(encoding="utf-8"))["decode"]
    assert decode["rerank"] == str(r2l_run.run) and decode["rerank_weight"] == 3.0


def test_a_reverse_and_a_right_to_left_run_rerank_together_each_at_its_weight(r2l_run, tiny_run, tmp_path):
    """`--rerank A --rerank B`: each run at its own weight (its default where none is given, recorded
    as lists), so that one at weight 0 leaves the other's reranking as it is alone. The tiny run
    stands in for its own reverse run (its vocabulary is joint)."""
    tiny, r2l = str(tiny_run.run), str(r2l_run.run)
    src, ref = tiny_run.data / "valid.src", tiny_run.data / "valid.tgt"

    def reranked(name: str, *flags: str) -> list[str]:
        out = tmp_path / f"{name}.txt"
        args = ["-i", str(src), "-o", str(out), "--beam", "3", "--engine", "s2s", *flags]
        result = run_cli("translate", tiny, *args)
        assert result.exit_code == 0, result.output
        return out.read_text(encoding="utf-8").splitlines()

    both = ["--rerank", tiny, "--rerank", r2l]
    assert reranked("reverse", *both, "--rerank-weight", "0.5", "--rerank-weight", "0") == reranked(
        "reverse_alone", "--rerank", tiny, "--rerank-weight", "0.5"
    )
    assert reranked("r2l", *both, "--rerank-weight", "0", "--rerank-weight", "3") == reranked(
        "r2l_alone", "--rerank", r2l
    )
    report = tmp_path / "val.json"
    args = ["--src", str(src), "--ref", str(ref), "--out", str(tmp_path / "hyp.txt"), "--json", str(report)]
    result = run_cli("evaluate", tiny, *args, "--beam", "2", *both)
    assert result.exit_code == 0, result.output
    decode = json.loads(report.read_text(encoding="utf-8"))["decode"]
    assert decode["rerank"] == [tiny, r2l] and decode["rerank_weight"] == [0.2, 3.0]
    before = sorted(p.name for p in tmp_path.iterdir())
    refused = run_cli(
        "translate", tiny, "-i", str(src), "-o", str(tmp_path / "no.txt"), *both, "--rerank-weight", "1"
    )
    assert refused.exit_code == 2 and "1 weight(s) for 2 --rerank run(s)" in refused.output
    weights = [
        "--rerank-weight",
        "1",
        "--rerank-weight",
        "200",
    ]  # each weight is in range, not only the first
    refused = run_cli("translate", tiny, "-i", str(src), "-o", str(tmp_path / "no.txt"), *both, *weights)
    assert refused.exit_code == 2 and "200.0 is not in [0, 100]" in refused.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before
