"""The studies' tables (experiments/records.py) read what s2s writes: an `s2s evaluate --json` record
becomes its row, the best of several records is the one with the highest BLEU, a run's
metrics.jsonl gives one row per validation of its raw weights, a choice on val gives what it chose,
and a run says the step its training finished at."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.records import best, chosen, curve, finished, row
from seq2seq.evaluation.selection import Candidate, write_selection
from tests.helpers import run_cli


def test_a_row_holds_the_scores_and_speed_that_evaluate_recorded(tiny_run, tmp_path):
    record = tmp_path / "valid.json"
    args = ["--src", str(tiny_run.data / "valid.src"), "--ref", str(tiny_run.data / "valid.tgt")]
    done = run_cli("evaluate", str(tiny_run.run), *args, "--json", str(record), "--device", "cpu")
    assert done.exit_code == 0, done.output
    data = json.loads(record.read_text(encoding="utf-8"))
    scores, speed = data["systems"][0]["scores"], data["decode"]["sentences_per_second"]
    bleu, chrf = scores["bleu"]["score"], scores["chrf"]["score"]
    cells = row(record, "tiny").strip("| ").split(" | ")
    assert cells == ["tiny", f"{bleu:.2f}", f"{chrf:.2f}", f"{speed:.1f}"]


def scored(path: Path, bleu: float) -> str:
    path.write_text(json.dumps({"systems": [{"scores": {"bleu": {"score": bleu}}}]}), encoding="utf-8")
    return str(path)


def test_the_best_is_the_highest_bleu_and_the_first_of_equals(tmp_path):
    a, b, c = (scored(tmp_path / f"{n}.json", bleu) for n, bleu in (("a", 30.0), ("b", 31.5), ("c", 31.5)))
    assert best([f"a={a}", f"b={b}", f"c={c}"]) == "b"
    assert best([f"0.1={a}"]) == "0.1"


def test_the_curve_has_a_row_per_validation_of_the_raw_weights(tiny_run):
    metrics = tiny_run.run / "metrics.jsonl"
    entries = [json.loads(line) for line in metrics.read_text(encoding="utf-8").splitlines()]
    raw = [e for e in entries if e.get("kind") == "valid" and e.get("weights", "raw") == "raw"]
    rows = curve(metrics)
    assert raw and len(rows) == len(raw)
    assert [r.split(" | ")[0].strip("| ").replace(",", "") for r in rows] == [str(e["step"]) for e in raw]


def test_a_choice_gives_what_it_chose_as_a_script_passes_it_on(tmp_path):
    pick = Candidate(("/r/a/best.pt", "/r/b/best.pt"), 3, 1.4, 40.5, "sig", ("x.json",))
    write_selection(tmp_path / "selection.json", [pick])
    said = {
        key: chosen(tmp_path / "selection.json", key) for key in ("beam", "length_penalty", "checkpoints")
    }
    assert said == {"beam": "3", "length_penalty": "1.4", "checkpoints": "/r/a/best.pt /r/b/best.pt"}


def test_a_run_says_the_step_it_finished_at_and_0_until_it_has(tiny_run, tmp_path):
    done = json.loads((tiny_run.run / "finished.json").read_text(encoding="utf-8"))["step"]
    assert finished(tiny_run.run) == done > 0
    assert finished(tmp_path) == 0  # a run still training (or never trained) has no finished.json
