"""The multilingual table (experiments/multilingual/multilingual_table.py) reads what its commands
write: each bilingual run's own choice on val (its pipeline's select step), the six-direction run's
one choice, zero-shot and pivoted fr->de."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from experiments.multilingual.multilingual_table import DIRECTIONS
from seq2seq.evaluation.selection import Candidate, write_selection
from seq2seq.pipeline.workspace import Workspace
from seq2seq.run.finished import record_finished
from seq2seq.run.layout import RunDir
from tests.conftest import ROOT


def record(path: Path, bleu: float) -> None:
    """What `s2s evaluate --json` writes, reduced to what the table reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    score = {"score": bleu, "signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"}
    path.write_text(json.dumps({"systems": [{"scores": {"bleu": score}}]}), encoding="utf-8")


def finished(run: Path, step: int) -> None:
    """A run whose training finished at `step`, as far as its record goes (its log says nothing)."""
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.pt").write_bytes(b"weights")
    (run / "config.yaml").write_text("run_dir: run\n", encoding="utf-8")
    (run / "train.log").write_text("... finished at step 1 (epoch 0); ...\n", encoding="utf-8")
    record_finished(RunDir(run), step, 4, "max_steps")


def test_the_table_has_every_direction_of_both_systems(tmp_path):
    for n, direction in enumerate(DIRECTIONS):
        pipeline = Workspace(tmp_path / direction.replace("-", "_"), *direction.split("-"))
        val = pipeline.candidate("select_teacher", "best", 1.0)
        record(val, 30.0 + n)
        record(pipeline.evaluation("teacher", "test_2016_flickr"), 20.0 + n)
        choice = Candidate(("best.pt",), 5, 1.0, 30.0 + n, "s", (str(val),))
        write_selection(pipeline.selection("select_teacher"), [choice])
        finished(pipeline.folder("teacher"), 500 + n)
    ml = tmp_path / "multilingual"
    for n, direction in enumerate([*DIRECTIONS, "fr-de", "fr-en-de"]):
        record(ml / "eval" / direction / "val.json", 40.0 + n)
        record(ml / "eval" / direction / "test_2016_flickr.json", 10.0 + n)
    records = tuple(str(ml / "eval" / d / "val.json") for d in DIRECTIONS)
    choice = Candidate(("/runs/multilingual/checkpoints/averaged.pt",), 5, 0.6, 42.5, "s", records)
    write_selection(ml / "eval" / "selection.json", [choice])
    finished(ml, 3400)
    done = subprocess.run(
        [sys.executable, "-m", "experiments.multilingual.multilingual_table", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {
        line.split(" | ")[0].lstrip("| "): line for line in done.stdout.splitlines() if line.startswith("| ")
    }
    assert rows["six bilingual models"].count("(") == 6 and "20.00 (30.00)" in rows["six bilingual models"]
    assert "25.00 (35.00)" in rows["six bilingual models"]
    assert "16.00 (46.00) | 17.00 (47.00) |" in rows["one six-direction model"]  # zero-shot, pivoted
    assert "Steps: bilingual 500, 501, 502, 503, 504, 505; six-direction 3,400." in done.stdout
    assert "checkpoint averaged, beam 5, length penalty 0.6 (mean val BLEU 42.50)" in done.stdout
