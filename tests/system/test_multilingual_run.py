"""A multilingual run end to end on the tiny corpus: every direction is validated on its own and their
mean chooses best.pt; `--to` picks the target language, a run with several needs it, an unknown code
is exit 2 naming the known ones, and a bilingual run refuses it; the CTranslate2 export reads the
language token as s2s does."""

from __future__ import annotations

import json

import pytest

from seq2seq.batching import pad
from seq2seq.data.textio import read_lines
from seq2seq.decoding.search import greedy_search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.special import EOS
from seq2seq.translate.direction import Direction
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.helpers import cli_translate, run_cli
from tests.system.cuda_helpers import assert_same_greedy, greedy_margins

MARGIN, SCORE_TOLERANCE = 1e-3, 1e-4  # as tests/unit/ct2/test_export.py: fp32 kernels' rounding


def test_every_direction_is_validated_and_their_mean_counts(multilingual_run):
    records = [json.loads(line) for line in (multilingual_run.run / "metrics.jsonl").open()]
    valid = [r for r in records if r["kind"] == "valid"]
    assert [r["step"] for r in valid] == [6, 12]
    for r in valid:  # each rounded to 2 decimals on its own
        assert abs(r["valid_bleu"] - (r["valid_bleu.de-en"] + r["valid_bleu.en-de"]) / 2) <= 0.01
        assert {"valid_loss.de-en", "valid_loss.en-de", "valid_ppl.de-en"} <= r.keys()


def test_to_chooses_the_target_language(multilingual_run):
    lines = (multilingual_run.data / "valid.src").read_text(encoding="utf-8").splitlines()[:6]
    into_en = cli_translate(multilingual_run.run, lines, "--to", "en", "--beam", "1", "--scores")
    into_de = cli_translate(multilingual_run.run, lines, "--to", "de", "--beam", "1", "--scores")
    assert len(into_en) == len(into_de) == 6
    # one language token apart: the model reads another source (a barely trained one may still write
    # the same words, but not with the same scores)
    assert all(en != de for en, de in zip(into_en, into_de, strict=True))


def test_a_run_of_several_target_languages_needs_to_and_knows_its_codes(multilingual_run, tiny_run):
    run = str(multilingual_run.run)
    unchosen = run_cli("translate", run, "--device", "cpu", input="red cat\n")
    assert unchosen.exit_code == 2 and "translates into de, en: choose one with --to" in unchosen.output
    unknown = run_cli("translate", run, "--device", "cpu", "--to", "fr", input="red cat\n")
    assert (
        unknown.exit_code == 2
        and "--to fr: not a language of this run (its languages: de, en)" in unknown.output
    )
    bilingual = run_cli("translate", str(tiny_run.run), "--device", "cpu", "--to", "en", input="red\n")
    assert (
        bilingual.exit_code == 2 and "this run translates one direction; leave --to out" in bilingual.output
    )


def test_evaluate_records_the_direction_it_translated(multilingual_run, tmp_path):
    data = multilingual_run.data
    record = tmp_path / "eval.json"
    result = run_cli(
        "evaluate", str(multilingual_run.run), "--device", "cpu", "--to", "de",
        "--src", str(data / "valid.tgt"), "--ref", str(data / "valid.src"),
        "--out", str(tmp_path / "hyp.txt"), "--json", str(record),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(record.read_text())["decode"]["to"] == "de"


def test_the_ctranslate2_export_reads_the_language_token_as_s2s_does(multilingual_run, tmp_path):
    """Greedy search of the export, sources starting with `<2de>` or `<2en>`: s2s's tokens wherever
    its top two choices differ by the margin, and its scores where they all do (fp32)."""
    pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
    from seq2seq.ct2.runtime import CT2Translator

    export = tmp_path / "export"
    result = run_cli("export", str(multilingual_run.run), str(export))
    assert result.exit_code == 0, result.output
    ours = Translator.load(multilingual_run.run, ["best"], Placement("cpu", "fp32"))
    theirs = CT2Translator.load(export, Placement("cpu"))
    lines = read_lines(multilingual_run.data / "valid.src")
    settings = SearchSettings(beam=1)
    for to in ("de", "en"):
        prefix = ours.source_tokens.prefix(Direction(to))
        src = pad([[*prefix, *ids, EOS] for ids in ours.tokenizers.src.encode(lines)])
        mine = greedy_search(ours.model, src, settings)
        start = theirs.tokenizers.src.id_pieces(theirs.source_tokens.prefix(Direction(to)))
        assert start == [f"<2{to}>"]
        got = theirs.search([[*start, *theirs.tokenizers.src.pieces(x)] for x in lines], settings, 500)
        margins = greedy_margins(ours.model, src, mine, settings)
        clear = assert_same_greedy(mine, got, margins, MARGIN, SCORE_TOLERANCE)
        assert clear >= len(lines) // 2, f"{to}: only {clear} sentences without a close call"


@pytest.mark.parametrize("search", [("--beam", "1"), ("--beam", "2", "--nbest", "2")])
def test_pivoting_is_the_translation_into_the_pivot_translated_on(multilingual_run, tmp_path, search):
    """`--to en --pivot de` gives what `--to de`'s best translations give translated `--to en`: the
    first leg's best hypothesis only, the answer's n-best and scores the second leg's; stdin and the
    resumable -i/-o path alike (fp32: the same numbers on every CPU; auto is bf16 on some)."""
    lines = read_lines(multilingual_run.data / "valid.src")[:8]
    lines[3] = ""  # an empty line stays empty through both legs
    fp32 = ("--precision", "fp32")
    middle = [
        t.split("\t")[0] for t in cli_translate(multilingual_run.run, lines, "--to", "de", *fp32, *search[:2])
    ]
    expected = cli_translate(multilingual_run.run, middle, "--to", "en", *fp32, *search, "--scores")
    pivoted = cli_translate(
        multilingual_run.run, lines, "--to", "en", "--pivot", "de", *fp32, *search, "--scores"
    )
    assert pivoted == expected
    source, out = tmp_path / "source.txt", tmp_path / "out.txt"
    source.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    result = run_cli(
        "translate", str(multilingual_run.run), "--device", "cpu", "--to", "en", "--pivot", "de", *fp32,
        *search, "--scores", "-i", str(source), "-o", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").splitlines() == expected


@pytest.mark.slow
def test_evaluate_scores_the_pivoted_translation_and_records_the_pivot(multilingual_run, tmp_path):
    data = multilingual_run.data
    record, hyp = tmp_path / "eval.json", tmp_path / "hyp.txt"
    result = run_cli(
        "evaluate", str(multilingual_run.run), "--device", "cpu", "--precision", "fp32", "--to", "en",
        "--pivot", "de", "--src", str(data / "valid.src"), "--ref", str(data / "valid.tgt"),
        "--out", str(hyp), "--json", str(record),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(record.read_text())["decode"]["pivot"] == "de"
    lines = read_lines(data / "valid.src")
    assert hyp.read_text(encoding="utf-8").splitlines() == cli_translate(
        multilingual_run.run, lines, "--to", "en", "--pivot", "de", "--precision", "fp32"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (("--to", "en", "--pivot", "en"), "--pivot en is the target language itself: leave --pivot out"),
        (("--to", "en", "--pivot", "fr"), "--pivot fr: not a language of this run (its languages: de, en)"),
        (("--pivot", "de"), "this run translates into de, en: choose one with --to"),
    ],
)
def test_a_pivot_that_cannot_be_is_refused(multilingual_run, args, message):
    refused = run_cli("translate", str(multilingual_run.run), "--device", "cpu", *args, input="red cat\n")
    assert refused.exit_code == 2 and message in refused.output


def test_a_bilingual_run_refuses_a_pivot(tiny_run, tmp_path):
    data = tiny_run.data
    refused = run_cli("translate", str(tiny_run.run), "--device", "cpu", "--pivot", "en", input="red\n")
    assert refused.exit_code == 2 and "translates one direction; leave --pivot out" in refused.output
    scored = run_cli(
        "evaluate", "--hyp", str(data / "valid.tgt"), "--ref", str(data / "valid.tgt"), "--pivot", "en"
    )
    assert scored.exit_code == 2 and "--hyp files are already translated" in scored.output
