"""A multilingual run end to end on the tiny corpus: every direction is validated on its own and their
mean chooses best.pt; `--to` picks the target language, a run with several needs it, an unknown code
is exit 2 naming the known ones, and a bilingual run refuses it."""

from __future__ import annotations

import json

from tests.helpers import cli_translate, run_cli


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
    assert all(en != de for en, de in zip(into_en, into_de))


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
