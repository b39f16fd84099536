"""CTranslate2 export: the same weights give the same tokens and log-probabilities in both engines."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from seq2seq.batching import pad
from seq2seq.config import ModelConfig
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import load_tokenizers
from seq2seq.decoding.bulk import decode_ids
from seq2seq.decoding.search import max_output_lengths
from seq2seq.models.build import build_model
from seq2seq.special import BOS, EOS
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import run_cli

ctranslate2 = pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
from seq2seq.ct2.engine import CT2Translator  # noqa: E402
from seq2seq.ct2.export import write_model  # noqa: E402


@pytest.fixture(scope="module")
def trained(trained_run: Callable[[str], TrainedRun], tmp_path_factory) -> tuple[Path, Path]:
    """The shared "confident" run (greedy choices with clear margins) and its export."""
    run = trained_run("confident").run
    export = tmp_path_factory.mktemp("ct2") / "export"
    result = run_cli("export", str(run), str(export))
    assert result.exit_code == 0, result.output
    return run, export


def test_greedy_output_of_the_export_is_token_identical(trained):
    run, export = trained
    lines = read_lines(run.parent / "data" / "valid.src") + ["red cat", "the small bird sleeps on a tree"]
    ours = Translator.load(run, ["best"], Placement("cpu", "fp32"))
    theirs = CT2Translator.load(export, Placement("cpu"))
    settings = ours.options(
        DecodeOverrides(beam=1, max_len_a=0.0, max_len_b=30)
    ).search  # one length limit for every line
    ids = ours.tokenizers.src.encode(lines)
    expected = [h[0].tokens for h in decode_ids(ours.model, ids, settings, 500, torch.device("cpu"))]
    pieces = [ours.tokenizers.src.pieces(x) for x in lines]
    results = theirs.engine.translate_batch(pieces, beam_size=1, max_decoding_length=29)  # + </s> = 30
    sp = ours.tokenizers.tgt.sp
    got = [[sp.piece_to_id(p) for p in r.hypotheses[0]] for r in results]
    assert got == expected
    assert [t.texts for t in theirs.translate(lines, settings, 500)] == [
        t.texts for t in ours.translate(lines, settings, 500)
    ]


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_export_scores_every_token_as_s2s_does(trained, tmp_path, norm):
    """Random weights, both layer-norm placements: the weight mapping is right, not just the argmax."""
    run, _ = trained
    toks = load_tokenizers(run / "tokenizer", True)
    cfg = ModelConfig(d_model=32, heads=4, ffn_dim=48, encoder_layers=2, decoder_layers=2, norm=norm)
    torch.manual_seed(3)
    model = build_model(cfg, toks.src.vocab_size, toks.tgt.vocab_size).eval()
    with torch.no_grad():  # LayerNorm weights away from 1 and 0, so a misplaced norm shows
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    write_model(model, toks, tmp_path, None)
    engine = ctranslate2.Translator(str(tmp_path), device="cpu")
    sources = ["red cat runs", "the big dog eats"]
    targets = ["RUNS CAT RED", "EATS"]
    scored = engine.score_batch([toks.src.pieces(s) for s in sources], [toks.tgt.pieces(t) for t in targets])
    src = pad([[*ids, EOS] for ids in toks.src.encode(sources)])
    tgt = toks.tgt.encode(targets)
    with torch.no_grad():
        logp = model(src, pad([[BOS, *ids] for ids in tgt])).log_softmax(-1)
    for row, (ids, result) in enumerate(zip(tgt, scored)):
        expected = [float(logp[row, i, token]) for i, token in enumerate([*ids, EOS])]
        assert result.log_probs == pytest.approx(expected, abs=2e-4)


def test_translate_with_the_ctranslate2_engine_keeps_one_line_per_input(trained, tmp_path):
    _, export = trained
    source = tmp_path / "in.txt"
    source.write_text("red cat\n\nthe dog\n", encoding="utf-8")
    result = run_cli("translate", str(export), "--engine", "ctranslate2", "-i", str(source), "--nbest", "2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "\t0.0000\t\t0.0000" and lines[3] == ""
    assert lines[0].count("\t") == 3


def test_an_int8_export_translates(trained, tmp_path):
    run, _ = trained
    out = tmp_path / "int8"
    result = run_cli("export", str(run), str(out), "--quantize", "int8")
    assert result.exit_code == 0, result.output
    result = run_cli("translate", str(out), "--engine", "ctranslate2", input="red cat\n\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 2 and result.stdout.split("\n")[1] == ""


@pytest.mark.parametrize(
    "case",
    ["export_into_nonempty", "checkpoint_with_export", "run_dir_as_export", "unknown_engine", "bad_quantize"],
)
def test_export_mistakes_are_clear_errors(trained, tmp_path, case):
    run, export = trained
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    args, message = {
        "export_into_nonempty": (["export", str(run), str(busy)], "not empty"),
        "checkpoint_with_export": (
            ["translate", str(export), "--engine", "ctranslate2", "--checkpoint", "last"],
            "--checkpoint",
        ),
        "run_dir_as_export": (["translate", str(run), "--engine", "ctranslate2"], "s2s export"),
        "unknown_engine": (["translate", str(run), "--engine", "marian"], "choose s2s or ctranslate2"),
        "bad_quantize": (["export", str(run), str(tmp_path / "q"), "--quantize", "int3"], "choose one of"),
    }[case]
    result = run_cli(*args, input="red cat\n")
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert (busy / "keep.txt").read_text() == "mine"


def test_the_export_records_where_it_came_from(trained):
    run, export = trained
    info = CT2Translator.load(export, Placement("cpu")).info
    assert Path(info["checkpoint"]).name == "best.pt" and info["run_dir"] == str(run.resolve())
    assert dataclasses.asdict(CT2Translator.load(export, Placement("cpu")).config.model)["d_model"] == 32


def test_the_length_limit_means_what_it_means_in_s2s(trained):
    """CTranslate2 does not count </s> in its limit; s2s does (`max_output_lengths`)."""
    _, export = trained
    theirs = CT2Translator.load(export, Placement("cpu"))
    for a, b, min_len in [(1.5, 10, 1), (0.0, 30, 1), (2.0, 0, 5), (3.0, 50, 1)]:
        settings = theirs.options(DecodeOverrides(max_len_a=a, max_len_b=b, min_len=min_len)).search
        for length in (1, 4, 9, 40):
            src = torch.full((1, length), 7)  # `length` tokens, </s> included
            expected = int(max_output_lengths(src, settings, theirs.config.model.max_positions)[0]) - 1
            assert theirs._length_limit(settings, length) == expected
