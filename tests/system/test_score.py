"""`s2s score`: the teacher-forced log-probability of given pairs equals what search accumulated for
its own outputs, batched equals one at a time, for both generative families; the CLI streams
compressed files, one line out per pair in, and the dual cross-entropy with a reverse run."""

from __future__ import annotations

import gzip
import json
import math

import pytest
import torch

from seq2seq.data.textio import read_lines
from seq2seq.decoding.hypothesis import length_normalizer
from seq2seq.decoding.length_limits import output_limits
from seq2seq.translate.placement import Placement
from seq2seq.translate.scoring import score_ids, score_pairs
from seq2seq.translate.translator import Translator
from tests.conftest import write_corpus
from tests.helpers import run_cli

FP32 = Placement("cpu", "fp32", None)


@pytest.fixture(params=["confident", "decoder_only"])
def translator(request, trained_run) -> Translator:
    return Translator.load(trained_run(request.param).run, ("best",), FP32)


@pytest.mark.parametrize("beam", [1, 5])
def test_the_score_of_the_search_s_own_output_is_the_sum_it_accumulated(translator, trained_run, beam):
    lines = read_lines(trained_run("tiny").data / "valid.src")
    settings = translator.options().search
    settings = type(settings)(**{**settings.__dict__, "beam": beam, "nbest": beam})
    sources = translator.tokenizers.src.encode(lines)
    found = translator.decode_ids(sources, settings, 400)
    counts = torch.tensor([len(s) + 1 for s in sources])
    limits = output_limits(counts, settings, translator.model.max_positions).tolist()
    checked = 0
    for source, nbest, limit in zip(sources, found, limits, strict=True):
        scored = score_ids(translator, [source] * len(nbest), [h.tokens for h in nbest], 400)
        for h, s in zip(nbest, scored, strict=True):
            cut = len(h.tokens) == limit - 1  # the search forced </s> there: log 1, not the model's
            accumulated = h.score * length_normalizer(len(h.tokens), settings, chose_end=not cut)
            assert math.fsum(s.tokens[:-1] if cut else s.tokens) == pytest.approx(accumulated, abs=1e-4)
            checked += not cut
    if translator.config.model.arch == "encoder_decoder":  # the decoder-only run is cut at its limits
        assert checked >= 5  # some ended by the model's choice


def test_batched_scores_equal_one_pair_at_a_time(translator, trained_run):
    data = trained_run("tiny").data
    src, tgt = read_lines(data / "valid.src"), read_lines(data / "valid.tgt")
    together = score_pairs(translator, src, tgt, 10_000)
    alone = [score_pairs(translator, [s], [t], 1)[0] for s, t in zip(src, tgt, strict=True)]
    for a, b in zip(together, alone, strict=True):
        assert len(a.tokens) == len(b.tokens)
        assert a.tokens == pytest.approx(b.tokens, abs=1e-5)


def test_the_cli_streams_compressed_pairs_and_gives_the_dual_cross_entropy(tiny_run, tmp_path):
    src, tgt = read_lines(tiny_run.data / "valid.src"), read_lines(tiny_run.data / "valid.tgt")
    (tmp_path / "s.gz").write_bytes(gzip.compress(("\n".join(src) + "\n").encode()))
    (tmp_path / "t").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    args = [
        "score",
        str(tiny_run.run),
        "--src",
        str(tmp_path / "s.gz"),
        "--tgt",
        str(tmp_path / "t"),
        "--device",
        "cpu",
    ]
    plain = run_cli(*args, "--precision", "fp32")
    assert plain.exit_code == 0, plain.output
    rows = [line.split("\t") for line in plain.stdout.splitlines()]
    assert len(rows) == len(src) and all(len(r) == 2 for r in rows)
    tokenizer = Translator.load(tiny_run.run, ("best",), FP32).tokenizers.tgt
    for (total, per_token), t in zip(rows, tgt, strict=True):
        pieces = len(tokenizer.encode([t])[0]) + 1
        assert float(per_token) == pytest.approx(float(total) / pieces, abs=1e-3)
    dual = run_cli(*args, "--precision", "fp32", "--reverse", str(tiny_run.run))
    assert dual.exit_code == 0, dual.output
    for line in dual.stdout.splitlines():
        d, h_fwd, h_rev = map(float, line.split("\t"))
        assert d == pytest.approx(abs(h_fwd - h_rev) + (h_fwd + h_rev) / 2, abs=2e-4) and math.isfinite(d)


def test_pairs_that_do_not_align_are_refused_before_a_model_loads(tiny_run, tmp_path):
    (tmp_path / "s").write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "t").write_text("A\n", encoding="utf-8")
    result = run_cli("score", str(tiny_run.run), "--src", str(tmp_path / "s"), "--tgt", str(tmp_path / "t"))
    assert result.exit_code == 2 and "has 2 lines but" in result.output


def test_nbest_lists_are_reranked_by_the_per_token_score(tiny_run, tmp_path):
    lines = read_lines(tiny_run.data / "valid.src")[:6]
    (tmp_path / "s").write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = ["--device", "cpu", "--precision", "fp32"]
    listed = run_cli("translate", str(tiny_run.run), "-i", str(tmp_path / "s"), "--nbest", "3", *common)
    assert listed.exit_code == 0, listed.output
    (tmp_path / "n").write_text(listed.stdout, encoding="utf-8")
    args = ["score", str(tiny_run.run), "--src", str(tmp_path / "s"), *common]
    reranked = run_cli(*args, "--nbest", str(tmp_path / "n"))
    assert reranked.exit_code == 0, reranked.output
    translator = Translator.load(tiny_run.run, ("best",), FP32)
    for before, after, source in zip(
        listed.stdout.splitlines(), reranked.stdout.splitlines(), lines, strict=True
    ):
        texts, shown = after.split("\t")[0::2], after.split("\t")[1::2]
        assert sorted(texts) == sorted(before.split("\t")[0::2])
        blank = [text for text in texts if not text.strip()]  # no score: last, saying why
        assert texts[len(texts) - len(blank) :] == blank and shown[len(texts) - len(blank) :] == [
            "blank"
        ] * len(blank)
        values = [float(v) for v in shown[: len(texts) - len(blank)]]
        assert values == sorted(values, reverse=True)
        for value, s in zip(values, score_pairs(translator, [source] * 3, texts, 1000), strict=False):
            assert value == pytest.approx(-s.cross_entropy, abs=1e-3)
    (tmp_path / "bad").write_text("one field\n" * 6, encoding="utf-8")
    refused = run_cli(*args, "--nbest", str(tmp_path / "bad"))
    assert refused.exit_code == 2 and "line 1 is not `s2s translate --nbest` output" in refused.output


@pytest.mark.slow
def test_a_tagged_run_translates_and_evaluates_with_its_tag(tmp_path):
    """A run trained on a tagged gzip TSV corpus: `evaluate --tag` translates as `translate --tag`
    does, records the tag, and refuses one the config does not declare, listing its own."""
    from tests.conftest import train_run

    (tmp_path / "data").mkdir()
    train_src, train_tgt = write_corpus(tmp_path / "data", "tagged", 200, seed=3)
    pairs = zip(read_lines(train_src), read_lines(train_tgt), strict=True)
    (tmp_path / "bt.tsv.gz").write_bytes(gzip.compress("".join(f"{s}\t{t}\n" for s, t in pairs).encode()))
    corpora = [{"name": "bt", "tsv": str(tmp_path / "bt.tsv.gz"), "tag": "<bt>"}]
    run = train_run(
        tmp_path,
        {
            "train": {"max_steps": 6, "valid_every": 6},
            "data": {"corpora": corpora},
            "tokenizer": {"control_tokens": ["<bt>"]},
        },
        drop=("train_src", "train_tgt"),
    )
    common = ["--device", "cpu", "--precision", "fp32", "--beam", "2"]
    source = str(run.data / "valid.src")
    translated = run_cli("translate", str(run.run), "-i", source, "--tag", "<bt>", *common)
    assert translated.exit_code == 0, translated.output
    record = tmp_path / "eval.json"
    evaluated = run_cli(
        "evaluate", str(run.run), "--src", source, "--ref", str(run.data / "valid.tgt"), "--out",
        str(tmp_path / "eval.hyp"), "--json", str(record), "--tag", "<bt>", *common,
    )  # fmt: skip
    assert evaluated.exit_code == 0, evaluated.output
    assert (tmp_path / "eval.hyp").read_text(encoding="utf-8") == translated.stdout
    assert json.loads(record.read_text())["decode"]["tag"] == "<bt>"
    refused = run_cli("translate", str(run.run), "--tag", "<2fr>", input="red cat\n")
    assert refused.exit_code == 2 and "tokenizer.control_tokens declares: <bt>" in refused.output
