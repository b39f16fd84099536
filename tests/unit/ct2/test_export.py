"""CTranslate2 export: the same weights give the same tokens and log-probabilities in both engines,
under the same constraints (forbidden tokens, minimum length, each sentence's length limit)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from seq2seq.batching import pad
from seq2seq.config import ModelConfig
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import load_tokenizers
from seq2seq.decoding.length_limits import max_output_lengths
from seq2seq.decoding.prefix import Forced
from seq2seq.decoding.search import greedy_search
from seq2seq.decoding.search import search as search_for
from seq2seq.decoding.settings import SearchSettings
from seq2seq.models.build import build_model
from seq2seq.special import BOS, EOS, PAD
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.helpers import cli_translate, run_cli
from tests.system.cuda_helpers import assert_same_greedy, greedy_margins
from tests.unit.decoding.test_search import forced_score

ctranslate2 = pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
from seq2seq.ct2.conversion import model_spec, write_model  # noqa: E402
from seq2seq.ct2.export_dir import FULL_INT8, REDUCED_INT8, full_range_int8  # noqa: E402
from seq2seq.ct2.runtime import CT2Translator, Threads  # noqa: E402
from seq2seq.translate.request import Request  # noqa: E402
from tests.unit.ct2.conftest import UNDER_TRAINED  # noqa: E402


def test_greedy_output_of_the_export_is_s2s_greedy_output_through_the_cli(trained):
    """The confident run (clear choices), each line under its own length limit: the same lines."""
    run, export = trained
    lines = read_lines(run.parent / "data" / "valid.src") + ["red cat", "the small bird sleeps on a tree"]
    ours = cli_translate(run, lines, "--beam", "1", "--precision", "fp32")  # auto might pick bf16
    theirs = cli_translate(export, lines, "--beam", "1", "--engine", "ctranslate2")
    assert theirs == ours and any(ours)


MARGIN = 1e-3  # a best choice ahead of its runner-up by less than this may flip with the kernels' rounding
SCORE_TOLERANCE = 1e-4  # |s2s - CTranslate2| of a sentence's score, fp32 (seen: under 3e-6)
GREEDY_SETTINGS = [
    SearchSettings(beam=1),  # each sentence's own limit: 1.5 x source tokens + 10
    SearchSettings(beam=1, min_len=3),
    SearchSettings(beam=1, max_len_a=0.5, max_len_b=3, min_len=0),
    SearchSettings(beam=1, no_repeat_ngram=2),
]


@pytest.mark.parametrize("settings", GREEDY_SETTINGS, ids=["limits", "min_len", "short", "no_repeat"])
@pytest.mark.parametrize("kind", UNDER_TRAINED)
def test_greedy_search_of_the_export_is_s2s_greedy_search(under_trained, tiny_run, kind, settings):
    """The rule: the same tokens wherever s2s's top two choices differ by MARGIN or more (never <pad>
    or <bos>, no </s> before min_len, each sentence cut at its own limit), and where they all do, the
    same score within SCORE_TOLERANCE: the log-probabilities of the allowed tokens, over the normalizer."""
    model, theirs = under_trained(kind)
    lines = read_lines(tiny_run.data / "valid.src") + read_lines(tiny_run.data / "train.src")[:40]
    src = pad([[*ids, EOS] for ids in theirs.tokenizers.src.encode(lines)])
    ours = greedy_search(model, src, settings)
    got = theirs.search([theirs.tokenizers.src.pieces(x) for x in lines], settings, 500)
    clear = assert_same_greedy(ours, got, greedy_margins(model, src, ours, settings), MARGIN, SCORE_TOLERANCE)
    assert clear >= len(lines) // 2, f"only {clear} sentences without a close call: the test shows little"


def test_target_prefixes_decode_as_ctranslate2_s_target_prefix(trained):
    """Each output starts with its prefix in both engines; greedy gives s2s's tokens wherever its
    choice after the prefix is clear, and its scores (the tokens after the prefix, over the steps with
    the prefix's counted). Beam search: `test_same_search.py`."""
    run, export = trained
    data = run.parent / "data"
    lines = read_lines(data / "valid.src") + read_lines(data / "train.src")[:40]
    ours = Translator.load(run, ["best"], Placement("cpu", "fp32"))
    theirs = CT2Translator.load(export, Placement("cpu"))
    references = read_lines(data / "valid.tgt") + read_lines(data / "train.tgt")[:40]
    prefixes = [ids[: i % 3] for i, ids in enumerate(ours.tokenizers.tgt.encode(references))]
    settings = SearchSettings(beam=1, nbest=1, length_norm="power", length_penalty=1.0)
    src = pad([[*ids, EOS] for ids in ours.tokenizers.src.encode(lines)])
    mine = search_for(ours.model, src, settings, Forced.of(prefixes, torch.device("cpu")))
    pieces = [ours.tokenizers.tgt.id_pieces(p) for p in prefixes]
    got = theirs.search([theirs.tokenizers.src.pieces(x) for x in lines], settings, 500, prefixes=pieces)
    for (best,), (found,), prefix in zip(mine, got, prefixes, strict=True):
        assert best.tokens[: len(prefix)] == found.tokens[: len(prefix)] == prefix
    margins = greedy_margins(ours.model, src, mine, settings)
    for lead, prefix in zip(margins, prefixes, strict=True):
        lead[: len(prefix)] = [math.inf] * len(prefix)  # given, not chosen
    clear = assert_same_greedy(mine, got, margins, MARGIN, SCORE_TOLERANCE)
    assert clear >= len(lines) // 2, f"only {clear} sentences without a close call"


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
    for row, (ids, result) in enumerate(zip(tgt, scored, strict=True)):
        expected = [float(logp[row, i, token]) for i, token in enumerate([*ids, EOS])]
        assert result.log_probs == pytest.approx(expected, abs=2e-4)


def test_translate_with_the_ctranslate2_engine_keeps_one_line_per_input(trained, tmp_path):
    _, export = trained
    source = tmp_path / "in.txt"
    source.write_text("red cat\n\nthe dog\n", encoding="utf-8")
    result = run_cli("translate", str(export), "--engine", "ctranslate2", "-i", str(source), "--nbest", "2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "\tblank\t\tblank" and lines[3] == ""
    assert lines[0].count("\t") == 3


def test_an_int8_export_translates(trained, tmp_path):
    run, _ = trained
    out = tmp_path / "int8"
    result = run_cli("export", str(run), str(out), "--quantize", "int8")
    assert result.exit_code == 0, result.output
    result = run_cli("translate", str(out), "--engine", "ctranslate2", input="red cat\n\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 2 and result.stdout.split("\n")[1] == ""


@pytest.mark.parametrize("limit", [REDUCED_INT8, FULL_INT8])
def test_int8_weights_use_7_bits_unless_asked_for_8_and_keep_their_values(trained, limit):
    translator = Translator.load(trained[0], placement=Placement("cpu", "fp32"))
    spec = model_spec(translator.first_model, translator.tokenizers, "int8", limit)
    floats = model_spec(translator.first_model, translator.tokenizers, None).variables()
    variables = spec.variables()  # name -> value, or the name of its twin (an alias)
    weights = {k: v.numpy() for k, v in variables.items() if f"{k}_scale" in variables and v.dtype == "int8"}
    assert len(weights) >= 4 * 2 + 2  # every layer's linear weights at least
    for name, w in weights.items():
        scale = variables[f"{name}_scale"].numpy()
        assert (abs(w.astype(int)).max(axis=1) == limit).all(), name  # each row spans the range
        assert abs(w / scale[:, None] - floats[name].numpy()).max() <= 0.5 / scale.min() + 1e-6, name


def test_an_int8_export_leaves_the_model_it_was_made_from_as_it_was(trained):
    model = Translator.load(trained[0], placement=Placement("cpu", "fp32")).first_model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model_spec(model, Translator.load(trained[0]).tokenizers, "int8", FULL_INT8)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


@pytest.mark.parametrize(
    ("stored", "int8_range", "at_load", "expected"),
    [
        (None, None, None, False),
        (None, None, "int8", True),  # CTranslate2 quantizes a float export at load, in 8 bits
        ("int8", REDUCED_INT8, None, False),
        ("int8", REDUCED_INT8, "int8", False),  # int8 weights are kept as they are
        ("int8", FULL_INT8, None, True),  # --full-range-int8
        ("int8", None, None, True),  # an export made before 7-bit weights
        ("int8", None, "float32", False),
    ],
)
def test_full_range_int8_is_known_from_the_export_and_the_load(stored, int8_range, at_load, expected):
    info = {"quantize": stored} | ({"int8_range": int8_range} if int8_range else {})
    assert full_range_int8(info, at_load) is expected


def test_8_bit_int8_on_a_cpu_without_vnni_is_warned_about(trained, monkeypatch, caplog):
    import seq2seq.ct2.runtime as engine

    _, export = trained
    monkeypatch.setattr(engine, "cpu_has_int8_dot_products", lambda: False)
    CT2Translator.load(export, Placement("cpu"))
    assert "VNNI" not in caplog.text
    CT2Translator.load(export, Placement("cpu", quantize="int8"))
    assert "no VNNI" in caplog.text and "--quantize int8" in caplog.text


def test_the_engine_decodes_one_batch_per_core_by_default(trained, monkeypatch):
    """As s2s's own decoder does: a batch at once per core it may use (as many as torch's threads), one
    thread each (the benchmark's grid finds this the fastest on a CPU); `--threads` asks another
    number of batches at once, and an explicit arrangement is kept."""
    import seq2seq.ct2.runtime as engine

    _, export = trained
    monkeypatch.setattr(engine, "usable_cores", lambda: 3)
    assert CT2Translator.load(export, Placement("cpu")).engine.num_translators == 3
    assert CT2Translator.load(export, Placement("cpu", threads=2)).engine.num_translators == 2
    assert CT2Translator.load(export, Placement("cpu"), Threads(1, 2)).engine.num_translators == 1


@pytest.mark.parametrize(
    "case",
    ["export_into_nonempty", "checkpoint_with_export", "export_as_run", "unknown_engine", "bad_quantize"],
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
        "export_as_run": (
            ["translate", str(export), "--engine", "s2s"],
            "s2s's decoder reads a run directory",
        ),
        "unknown_engine": (
            ["translate", str(run), "--engine", "marian"],
            "choose one of auto, s2s, ctranslate2",
        ),
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


def test_a_beam_and_length_penalty_given_to_export_are_its_decode_defaults(tiny_run, tmp_path):
    """An export made with --beam and --length-penalty translates, without options, as the plain
    export asked for them does (the same words and scores), not as the plain one by default; the
    check against s2s's decoder decodes at them too."""
    plain, chosen = tmp_path / "plain", tmp_path / "chosen"
    asked = ("--beam", "1", "--length-penalty", "0.3")
    for out, options in ((plain, ()), (chosen, asked)):
        result = run_cli("export", str(tiny_run.run), str(out), *options)
        assert result.exit_code == 0, result.output
    decode = CT2Translator.load(chosen, Placement("cpu")).config.decode
    assert (decode.beam, decode.length_penalty) == (1, 0.3)
    lines = read_lines(tiny_run.data / "valid.src")
    got = cli_translate(chosen, lines, "--engine", "ctranslate2", "--scores")
    assert got == cli_translate(plain, lines, "--engine", "ctranslate2", "--scores", *asked)
    assert got != cli_translate(plain, lines, "--engine", "ctranslate2", "--scores")


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
    for nbest, limit in zip(found, limits, strict=True):
        assert len(nbest) == settings.nbest
        for hyp in nbest:
            assert settings.min_len <= len(hyp.tokens) < limit
            assert PAD not in hyp.tokens and BOS not in hyp.tokens
    assert len(set(limits)) > 2 and any(
        len(nbest[0].tokens) == limit - 1 for nbest, limit in zip(found, limits, strict=True)
    )
    if settings.sampling:
        for row, (hyp,) in enumerate(found):
            assert hyp.score == pytest.approx(
                forced_score(model, src[row : row + 1], hyp.tokens, settings), abs=SCORE_TOLERANCE
            )


def test_greedy_without_scores_gives_the_same_words(trained):
    """`s2s translate` asks CTranslate2 for scores only with --scores or --nbest: the words do not
    depend on it, the scores are left out (NaN)."""
    run, export = trained
    translator = CT2Translator.load(export, Placement("cpu"))
    lines = read_lines(run.parent / "data" / "valid.src")
    settings = translator.options(DecodeOverrides(beam=1)).search
    scored = translator.translate(lines, Request(settings, 500))
    plain = translator.translate(lines, Request(settings, 500, scores=False))
    assert [t.texts for t in plain] == [t.texts for t in scored]
    assert all(math.isnan(t.scores[0]) for t in plain) and not any(math.isnan(t.scores[0]) for t in scored)
