"""`s2s evaluate --augment`: each modified copy of a test set is the same for the same --seed, changes
the references only for upper and title, and is recorded beside the set as given with its signatures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seq2seq.errors import EvaluateError
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.evaluation.metrics import TextFile
from seq2seq.evaluation.modified_sets import ModifiedSets, augmented_sets, modified_lines
from seq2seq.evaluation.record import DecodeRun, evaluate_files, evaluation_record, format_table

SOURCE = [f"ein Mann fährt mit dem Fahrrad Nummer {i} über eine grüne Wiese." for i in range(40)] + [""]
REFERENCE = [f"a man rides bike number {i} across a green meadow." for i in range(40)] + [""]


def test_the_same_seed_gives_the_same_set_and_another_seed_other_typos():
    typos = modified_lines(SOURCE, "typos", seed=1)
    assert typos == modified_lines(SOURCE, "typos", seed=1)
    assert typos != modified_lines(SOURCE, "typos", seed=2)
    assert sum(a != b for a, b in zip(typos, SOURCE, strict=True)) == 40 and typos[-1] == ""
    assert modified_lines(SOURCE, "upper", seed=1) == [line.upper() for line in SOURCE]
    assert modified_lines(SOURCE, "nopunct", seed=1)[0] == SOURCE[0][:-1]


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ("upper,typo", "--augment typo: not a modifier; choose among upper, title, typos, nopunct"),
        (",", "name"),
    ],
)
def test_an_unknown_modifier_is_an_error_naming_the_valid_ones(names, message):
    with pytest.raises(EvaluateError, match=message):
        ModifiedSets.parse(names, 1)
    assert ModifiedSets.parse("typos, upper,typos", 3) == ModifiedSets(("typos", "upper"), 3)


def copy_source(src: TextFile, out: Path) -> DecodeRun:
    """A "translation" that writes the source itself: what a modified source becomes is then seen."""
    out.write_text("".join(f"{line}\n" for line in src.lines), encoding="utf-8")
    return DecodeRun({"engine": "copy"}, len(src.lines), 0, 0, 1.0)


def test_upper_and_title_change_the_references_typos_and_nopunct_do_not(tmp_path):
    source, reference = (TextFile(tmp_path / n, lines, n) for n, lines in (("src", SOURCE), ("ref", SOURCE)))
    augment = ModifiedSets(("upper", "title", "typos", "nopunct"), 1)
    sets = augmented_sets(augment, source, [reference], MetricOptions(), tmp_path / "out", copy_source)
    scores = {s.modifier: s.scores["bleu"].score for s in sets}
    assert (
        scores["upper"] == scores["title"] == pytest.approx(100)
    )  # the copied source meets its modified reference
    assert scores["typos"] < 100 and scores["nopunct"] < 100  # the reference stays as given
    assert [s.references_changed for s in sets] == [True, True, False, False]
    assert (tmp_path / "out.typos").read_text(encoding="utf-8").splitlines() == modified_lines(
        SOURCE, "typos", 1
    )


def test_the_table_and_the_json_show_each_set_beside_the_one_as_given(tmp_path):
    (tmp_path / "ref").write_text("".join(f"{line}\n" for line in REFERENCE), encoding="utf-8")
    (tmp_path / "hyp").write_text("".join(f"{line}\n" for line in REFERENCE), encoding="utf-8")
    source, reference = TextFile.read(tmp_path / "ref"), TextFile.read(tmp_path / "ref")
    result = evaluate_files([tmp_path / "hyp"], [reference], MetricOptions(), source)
    result.augmented = augmented_sets(
        ModifiedSets(("upper", "typos"), 7),
        source,
        [reference],
        MetricOptions(),
        tmp_path / "hyp",
        copy_source,
    )
    table = format_table(result).splitlines()
    assert table[1].split()[:2] == ["hyp", "100.00"] and table[2].split()[:3] == [
        "+upper",
        "100.00",
        "(+0.00)",
    ]
    assert table[3].startswith("+typos") and "(-" in table[3]
    assert "--seed 7 (upper: source and references; typos: source only)" in table[-1]
    record = json.loads(json.dumps(evaluation_record(result)))
    upper = record["augmented"][0]
    assert upper["modifier"] == "upper" and upper["changes"] == "source and references"
    assert upper["scores"]["bleu"]["signature"] == record["systems"][0]["scores"]["bleu"]["signature"]
    assert record["augmented"][1]["hypotheses"]["path"] == str((tmp_path / "hyp.typos").resolve())
