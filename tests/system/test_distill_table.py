"""The distillation table (scripts/distill_table.py) reads what scripts/multi30k_bt_distill.sh
writes: each run's choice on val and its test score, the student's int8 scores, and the bench's
speeds, each row's speed that of its own run, engine, weights and shortlist."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.system.test_multilingual_table import record


def speed_row(run: str, engine: str, quantize: str | None, shortlist: int, per_s: float) -> dict:
    return {
        "run_dir": f"runs/bt/{run}",
        "engine": engine,
        "quantize": quantize,
        "shortlist": shortlist,
        "beam": 5,
        "dtype": "float32",
        "sentences_per_s": per_s,
        "vs_reference": per_s / 100,
        "parameters": 1000,
    }


def table(runs: Path, names: list[str], shortlist: int, shrunk: bool = False) -> dict[str, str]:
    """The table's rows by label, for a layout with these runs and the int8 records of the last;
    `shrunk`: the students started from the teacher (STUDENT_INIT=teacher)."""
    results = []
    for n, name in enumerate(names):
        folder = runs / name / "eval"
        init = str(runs / "de_en") if shrunk and name.startswith("student") else ""
        folder.mkdir(parents=True)
        (runs / name / "config.yaml").write_text(yaml.safe_dump({"train": {"init_from": init}}))
        record(folder / "val_best_lp1.0.json", 30.0 + n)
        record(folder / "test.json", 20.0 + n)
        choice = {"checkpoint": "best", "length_penalty": "1.0", "val_bleu": 30.0 + n}
        (folder / "selection.json").write_text(json.dumps(choice | {"val_record": "val_best_lp1.0.json"}))
        results.append(speed_row(name, "s2s", None, 0, 100.0 + n))
    distilled = names[-1]
    student = runs / distilled / "eval"
    record(student / "int8_val.json", 50.0)
    record(student / "int8_test_2016_flickr.json", 51.0)
    record(runs / "ct2_int8_val.json", 52.0)
    record(runs / "ct2_int8_test_2016_flickr.json", 53.0)
    results += [speed_row(distilled, "s2s", "int8", 0, 300.0)]
    results += [speed_row(distilled, "ctranslate2", "int8", 0, 400.0)]
    if shortlist:
        record(runs / f"ct2_int8_sl{shortlist}_val.json", 54.0)
        record(runs / f"ct2_int8_sl{shortlist}_test_2016_flickr.json", 55.0)
        results += [speed_row(distilled, "ctranslate2", "int8", shortlist, 500.0)]
    (runs / "speed.json").write_text(json.dumps({"runs": {"results": results}}))
    (runs / "teacher.txt").write_text(
        f"teacher: {runs / 'de_en'} (checkpoint best, beam 5, length penalty 1.0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "scripts.distill_table", str(runs)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {
        line.split(" | ")[0].lstrip("| "): line for line in done.stdout.splitlines() if line.startswith("| ")
    }


@pytest.mark.parametrize("bt", [True, False], ids=["with back-translation", "BT=0"])
def test_each_row_has_its_own_scores_and_speed(tmp_path, bt):
    names = ["de_en", *(["de_en_bt"] if bt else []), "student", "student_distilled"]
    rows = table(tmp_path, names, shortlist=20)
    assert ("+ tagged back-translation of the English captions" in rows) == bt
    assert "| 30.00 | 20.00 | 100 (s2s, fp32) | 1.00x |" in rows["de→en recipe"]
    assert "| 30.00 | 20.00 | 100 (s2s, fp32) |" in rows["teacher (de_en, the better on val)"]
    last = len(names) - 1
    assert (
        f"| {30 + last}.00 | {20 + last}.00 | {100 + last} (s2s, fp32) |"
        in rows["student distilled from the teacher"]
    )
    assert "| 50.00 | 51.00 | 300 | 3.00x |" in rows["student distilled, int8, s2s"]
    assert "| 52.00 | 53.00 | 400 | 4.00x |" in rows["student distilled, int8, ctranslate2"]
    assert "| 54.00 | 55.00 | 500 | 5.00x |" in rows["student distilled, int8, ctranslate2, `--shortlist 20`"]


def test_without_a_shortlist_there_is_no_shortlisted_row(tmp_path):
    rows = table(tmp_path, ["de_en", "student", "student_distilled"], shortlist=0)
    assert "| 52.00 | 53.00 | 400 | 4.00x |" in rows["student distilled, int8, ctranslate2"]
    assert not any("--shortlist" in label for label in rows)


def test_distilled_from_the_sources_alone_is_the_one_measured_in_int8(tmp_path):  # DISTILL=sources
    rows = table(tmp_path, ["de_en", "student", "student_distilled_sources"], shortlist=20)
    assert "student distilled from the teacher" not in rows
    assert "| 32.00 | 22.00 | 102 (s2s, fp32) |" in rows["student distilled, training sources only"]
    assert "| 50.00 | 51.00 | 300 | 3.00x |" in rows["student distilled (sources only), int8, s2s"]
    assert (
        "| 54.00 | 55.00 | 500 | 5.00x |"
        in rows["student distilled (sources only), int8, ctranslate2, `--shortlist 20`"]
    )


def test_students_started_from_the_teacher_say_so(tmp_path):  # STUDENT_INIT=teacher
    rows = table(tmp_path, ["de_en", "student", "student_distilled_sources"], shortlist=0, shrunk=True)
    assert (
        "| 31.00 | 21.00 | 101 (s2s, fp32) |"
        in rows["student trained on the parallel data alone, started from the teacher"]
    )
    assert (
        "| 32.00 | 22.00 | 102 (s2s, fp32) |"
        in rows["student distilled, training sources only, started from the teacher"]
    )
    assert "| 30.00 | 20.00 | 100 (s2s, fp32) | 1.00x |" in rows["de→en recipe"]
