"""CTranslate2 export: the same weights give the same tokens and log-probabilities in both engines,
under the same constraints (forbidden tokens, minimum length, each sentence's length limit)."""

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
from seq2seq.decoding.search import SearchSettings, greedy_search, length_penalty, max_output_lengths
from seq2seq.models.build import build_model
from seq2seq.special import BOS, EOS, PAD
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import cli_translate, run_cli
from tests.system.cuda_helpers import assert_same_greedy, greedy_margins

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


def test_greedy_output_of_the_export_is_s2s_greedy_output_through_the_cli(trained):
    """The confident run (clear choices), each line under its own length limit: the same lines."""
    run, export = trained
    lines = read_lines(run.parent / "data" / "valid.src") + ["red cat", "the small bird sleeps on a tree"]
    ours = cli_translate(run, lines, "--beam", "1")
    theirs = cli_translate(export, lines, "--beam", "1", "--engine", "ctranslate2")
    assert theirs == ours and any(ours)


MARGIN = 1e-3  # a best choice ahead of its runner-up by less than this may flip with the kernels' rounding
SCORE_TOLERANCE = 1e-4  # |s2s - CTranslate2| of a sentence's score, fp32 (seen: under 3e-6)
UNDER_TRAINED = ["tiny run", "random post-norm", "random pre-norm"]
GREEDY_SETTINGS = [
    SearchSettings(beam=1),  # each sentence's own limit: 1.5 x source tokens + 10
    SearchSettings(beam=1, min_len=3),
    SearchSettings(beam=1, max_len_a=0.5, max_len_b=3, min_len=0),
    SearchSettings(beam=1, no_repeat_ngram=2),
]


@pytest.fixture(scope="module")
def under_trained(trained_run: Callable[[str], TrainedRun], tmp_path_factory) -> Callable:
    """`under_trained(kind)`: (s2s model, the CTranslate2 engine of the same weights) for a kind of
    UNDER_TRAINED: the 12-step tiny run (its outputs run to the length limit), or random weights
    whose <pad>, <bos> and </s> are often the first choice (what s2s's search forbids or limits)."""
    run = trained_run("tiny").run
    ours = Translator.load(run, ["best"], Placement("cpu", "fp32"))
    made = {}

    def get(kind: str) -> tuple[torch.nn.Module, CT2Translator]:
        if kind not in made:
            directory = tmp_path_factory.mktemp("ct2_" + kind.replace(" ", "_"))
            model, config = ours.model, ours.config
            if kind != "tiny run":
                norm = kind.split()[1].removesuffix("-norm")
                cfg = ModelConfig(
                    d_model=32, heads=4, ffn_dim=48, encoder_layers=2, decoder_layers=2, norm=norm
                )
                torch.manual_seed(0)
                vocab = ours.tokenizers.tgt.vocab_size
                model, config = build_model(cfg, vocab, vocab).eval(), dataclasses.replace(config, model=cfg)
                with torch.no_grad():  # output and embedding weights are tied: larger rows, larger logits
                    model.output.weight[[PAD, BOS]] *= 2
                    model.output.weight[EOS] *= 2 if norm == "post" else 4
            write_model(model, ours.tokenizers, directory, None)
            engine = ctranslate2.Translator(str(directory), device="cpu")
            made[kind] = model, CT2Translator(engine, ours.tokenizers, config, {})
        return made[kind]

    return get


@pytest.mark.parametrize("settings", GREEDY_SETTINGS, ids=["limits", "min_len", "short", "no_repeat"])
@pytest.mark.parametrize("kind", UNDER_TRAINED)
def test_greedy_search_of_the_export_is_s2s_greedy_search(under_trained, tiny_run, kind, settings):
    """The rule: the same tokens wherever s2s's top two choices differ by MARGIN or more (never <pad>
    or <bos>, no </s> before min_len, each sentence cut at its own limit), and where they all do, the
    same score within SCORE_TOLERANCE: the model's log-probabilities over GNMT's length penalty."""
    model, theirs = under_trained(kind)
    lines = read_lines(tiny_run.data / "valid.src") + read_lines(tiny_run.data / "train.src")[:40]
    src = pad([[*ids, EOS] for ids in theirs.tokenizers.src.encode(lines)])
    ours = greedy_search(model, src, settings)
    got = theirs.search([theirs.tokenizers.src.pieces(x) for x in lines], settings, 500)
    clear = assert_same_greedy(ours, got, greedy_margins(model, src, ours, settings), MARGIN, SCORE_TOLERANCE)
    assert clear >= len(lines) // 2, f"only {clear} sentences without a close call: the test shows little"


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


@pytest.mark.parametrize("search", ["beam", "sampling"])
def test_every_search_of_the_export_keeps_s2s_constraints(under_trained, tiny_run, search):
    """Beam search and sampling too, whose choices may differ from s2s's (by their scoring, or by
    chance): never <pad> or <bos>, at least min_len tokens, at most each sentence's own length limit
    (</s> included, as in `max_output_lengths`); a sample scored as s2s scores it."""
    model, theirs = under_trained("random post-norm")
    lines = read_lines(tiny_run.data / "valid.src") + read_lines(tiny_run.data / "train.src")[:40]
    constraints = {"min_len": 2, "max_len_a": 0.5, "max_len_b": 2}
    if search == "beam":
        settings = SearchSettings(beam=3, nbest=3, **constraints)
    else:
        settings = SearchSettings(beam=1, sampling=True, seed=1, **constraints)
    src = pad([[*ids, EOS] for ids in theirs.tokenizers.src.encode(lines)])
    limits = max_output_lengths(src, settings, model.max_positions).tolist()
    found = theirs.search([theirs.tokenizers.src.pieces(x) for x in lines], settings, 500)
    for nbest, limit in zip(found, limits):
        assert len(nbest) == settings.nbest
        for hyp in nbest:
            assert settings.min_len <= len(hyp.tokens) < limit
            assert PAD not in hyp.tokens and BOS not in hyp.tokens
    assert len(set(limits)) > 2 and any(
        len(nbest[0].tokens) == limit - 1 for nbest, limit in zip(found, limits)
    )
    if settings.sampling:
        for row, (hyp,) in enumerate(found):
            target = [*hyp.tokens, EOS]
            with torch.no_grad():
                logp = model(src[row : row + 1], torch.tensor([[BOS, *target[:-1]]]))[0].log_softmax(-1)
            logp_sum = float(logp[range(len(target)), target].sum())
            assert hyp.score == pytest.approx(
                logp_sum / length_penalty(len(target), settings.length_penalty), abs=SCORE_TOLERANCE
            )
