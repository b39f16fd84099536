"""--restore-case: a line in ALL CAPS or Title Case is translated recased as ordinary text and its
translations get the line's case back; every other line is translated exactly as given."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import pytest
import yaml

from seq2seq.data.augment import title
from seq2seq.data.tokenizer import TokenizerPair, load_tokenizers
from seq2seq.translate.casing import CASING_FILE, CaseRestored, Recaser, training_source, word_forms
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request
from tests.helpers import run_cli

# a tokenizer that knows these words whole in this casing; anything else costs a piece per letter
KNOWN = {"Ein", "ein", "Mann", "mit", "Hut", "Hunde", "Zwei", "spielt", "Gitarre", "der"}


def pieces(text: str) -> list[str]:
    word = text.strip()
    return [word] if word in KNOWN else list(word)


RECASER = Recaser(pieces)


@pytest.mark.parametrize(
    ("line", "recased", "case"),
    [
        ("EIN MANN MIT HUT SPIELT GITARRE.", "Ein Mann mit Hut spielt Gitarre.", "upper"),
        ("Ein Mann Mit Hut Spielt Gitarre.", "Ein Mann mit Hut spielt Gitarre.", "title"),
        ("„DER MANN“ MIT 2 HUNDE!", "„Der Mann“ mit 2 Hunde!", "upper"),
        ("ÄPFEL UND BIRNEN", "Äpfel und birnen", "upper"),  # unknown words: lower case
    ],
)
def test_a_shouted_or_titled_line_is_recased_and_its_case_restored(line, recased, case):
    got = RECASER.line(line)
    assert got.text == recased
    assert got.text.lower() == line.lower()  # only the case changes
    assert (
        got.restore("a man plays guitar.")
        == {"upper": "A MAN PLAYS GUITAR.", "title": "A Man Plays Guitar."}[case]
    )


@pytest.mark.parametrize(
    "line",
    [
        "Ein Mann spielt Gitarre.",
        "Zwei Hunde.",
        "A.",
        "",
        "123 !",
        "Der",
        "ein Mann MIT Hut",
        "NATO-Gipfel in Rom",
    ],
)
def test_every_other_line_is_translated_as_given(line):
    got = RECASER.line(line)
    assert got.text == line and got.restore("Two dogs.") == "Two dogs."


def test_the_training_text_decides_each_words_form_before_the_tokenizer_does():
    training = ["Ein Mann geht über die Straße.", "Zwei Männer in weißen T-Shirts.", "Der Mann isst."]
    forms = word_forms(training)
    assert forms["STRASSE"] == "Straße" and forms["MANN"] == "Mann" and "EIN" not in forms  # first words
    recaser = Recaser(pieces, forms)
    assert (
        recaser.line("DIE STRASSE, WEISSEN T-SHIRTS UND BIRNEN.").text
        == "Die Straße, weißen T-Shirts und birnen."
    )
    assert recaser.line("MANN ÜBER MANN").text == "Mann über Mann"


class Echo:
    """A line translator whose translations are its lines (two hypotheses each, scored)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def translate(self, lines: Sequence[str], request: Request, first_line: int = 1, prefixes=None):
        self.seen += lines
        return [Translation([line, line + " x"], [-1.0, -2.0]) for line in lines]


def test_each_line_keeps_its_place_its_hypotheses_and_their_scores():
    inner = Echo()
    lines = ["EIN MANN.", "Ein Mann spielt.", "", "Zwei Mit Hut"]
    out = CaseRestored(inner, RECASER).translate(lines, cast(Request, None))  # Echo reads no request
    assert inner.seen == ["Ein Mann.", "Ein Mann spielt.", "", "Zwei mit Hut"]
    assert [t.texts for t in out] == [
        ["EIN MANN.", "EIN MANN. X"],
        ["Ein Mann spielt.", "Ein Mann spielt. x"],
        ["", " x"],
        ["Zwei Mit Hut", title("Zwei mit Hut x")],
    ]
    assert all(t.scores == [-1.0, -2.0] for t in out)


def run_tokenizers(run: Path) -> TokenizerPair:
    """A run directory's tokenizers, as its config says they were made (joint or not)."""
    joint = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))["tokenizer"]["joint"]
    return load_tokenizers(run / "tokenizer", joint)


def with_prepared_dir(run: Path, prepared: Path) -> None:
    """Move the run's prepared corpora to `prepared` and name it in its config, as `data.prepared_dir`."""
    (run / "prepared").rename(prepared)
    raw = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    raw["data"]["prepared_dir"] = str(prepared)
    (run / "config.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")


def test_the_word_forms_come_from_the_prepared_corpora_in_data_prepared_dir(tiny_run, run_copy, tmp_path):
    """A run whose config keeps its prepared corpora elsewhere (`data.prepared_dir`) reads its training
    source there, as it reads its own prepared/ otherwise."""
    with_prepared_dir(run_copy.run, tmp_path / "shared_prepared")
    own = training_source(tiny_run.run)
    assert own and training_source(run_copy.run) == own


def test_no_word_forms_come_from_corpora_the_run_did_not_train_on(run_copy, tmp_path, caplog):
    """A prepared corpus made with another tokenizer (another run's, in a shared `data.prepared_dir`)
    is not decoded with this run's: the table is left empty, and a warning says why."""
    with_prepared_dir(run_copy.run, tmp_path / "shared_prepared")
    for manifest in (tmp_path / "shared_prepared").glob("*/manifest.json"):
        record = json.loads(manifest.read_text(encoding="utf-8"))
        record["made_from"]["tokenizer"] = {name: "0" * 64 for name in record["made_from"]["tokenizer"]}
        manifest.write_text(json.dumps(record), encoding="utf-8")
    assert training_source(run_copy.run) == []
    assert "tokenizer changed" in caplog.text


@pytest.mark.parametrize("damage", ["prepared corpora deleted", "inputs.json unreadable"])
def test_a_run_whose_training_text_cannot_be_read_recases_by_its_pieces(run_copy, damage, caplog):
    """Case restoring never stops a command: without the training text it warns and goes on."""
    if damage == "prepared corpora deleted":
        shutil.rmtree(run_copy.run / "prepared")
    else:
        (run_copy.run / "inputs.json").write_text("{not json", encoding="utf-8")
    assert training_source(run_copy.run) == []
    assert "no word forms" in caplog.text


def test_translate_gives_a_shouted_line_the_translation_of_its_recased_text_in_capitals(tiny_run, tmp_path):
    """The tiny run's own tokenizer recases; the engine translates the recased line as it would have
    been given; only the case of the output differs."""
    run = str(tiny_run.run)
    tokenizers = run_tokenizers(tiny_run.run)
    lines = (tiny_run.data / "valid.src").read_text(encoding="utf-8").splitlines()[:6]
    forms = word_forms(training_source(tiny_run.run))
    assert forms  # the run's prepared training source was read
    recased = [Recaser(tokenizers.src.pieces, forms).line(line.upper()).text for line in lines]
    common = ["--beam", "2", "--engine", "s2s", "--device", "cpu"]
    (tmp_path / "upper.txt").write_text("".join(line.upper() + "\n" for line in lines), encoding="utf-8")
    (tmp_path / "recased.txt").write_text("".join(line + "\n" for line in recased), encoding="utf-8")
    shouted = run_cli("translate", run, "-i", str(tmp_path / "upper.txt"), "--restore-case", *common)
    plain = run_cli("translate", run, "-i", str(tmp_path / "recased.txt"), *common)
    assert shouted.exit_code == 0 and plain.exit_code == 0, shouted.output + plain.output
    assert shouted.stdout.splitlines() == [t.upper() for t in plain.stdout.splitlines()]
    report = tmp_path / "val.json"
    args = ["--src", str(tmp_path / "upper.txt"), "--ref", str(tmp_path / "upper.txt"), "--json", str(report)]
    result = run_cli("evaluate", run, *args, "--out", str(tmp_path / "hyp.txt"), "--restore-case", *common)
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text(encoding="utf-8"))["decode"]["restore_case"] is True


def test_the_links_of_alignments_are_drawn_on_the_line_given(tiny_run):
    result = run_cli("translate", str(tiny_run.run), "--restore-case", "--alignments", input="ein mann\n")
    assert (
        result.exit_code == 2 and "--restore-case rewrites the line the links are drawn on" in result.output
    )


def test_an_export_recases_as_its_run_does_without_its_training_text(tiny_run, tmp_path):
    """`s2s export` keeps the run's table of word forms (it recorded in s2s.json): the deployed model
    recases a shouted line as the run would, not by its tokenizer's pieces alone."""
    pytest.importorskip("ctranslate2", reason="CTranslate2 publishes no wheel for this platform")
    out = tmp_path / "export"
    result = run_cli("export", str(tiny_run.run), str(out))
    assert result.exit_code == 0, result.output
    src = run_tokenizers(tiny_run.run).src
    run, export = Recaser.of_run(tiny_run.run, src), Recaser.of_run(out, src)
    assert run.forms and export.forms == run.forms
    assert CASING_FILE in json.loads((out / "s2s.json").read_text(encoding="utf-8"))["files"]
    lines = (tiny_run.data / "train.src").read_text(encoding="utf-8").upper().splitlines()[:50]
    assert [export.line(line).text for line in lines] == [run.line(line).text for line in lines]
