"""The recipe scripts choose decode settings on val in one place (scripts/select_on_val.py): the best
val BLEU wins, whatever order the records are found in; the choice is recorded once and read back as
it was chosen, by the shell (`--show`) and by Python (`recorded`) alike; a folder without records is
refused with `error:` and exit status 2, writing nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.select_on_val import recorded
from tests.conftest import ROOT


def val_record(folder: Path, checkpoint: str, lp: str, bleu: float) -> None:
    """What `s2s evaluate --json` writes, reduced to what the selection reads."""
    record = {"systems": [{"scores": {"bleu": {"score": bleu, "signature": "nrefs:1|tok:13a"}}}]}
    (folder / f"val_{checkpoint}_lp{lp}.json").write_text(json.dumps(record), encoding="utf-8")


def select(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "scripts.select_on_val", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("winner", [("best", "0.6"), ("averaged", "1.4"), ("averaged", "1.0")])
def test_the_best_val_bleu_is_chosen_recorded_and_read_back(tmp_path, winner):
    for checkpoint in ("best", "averaged"):
        for lp in ("0.6", "1.0", "1.4"):
            val_record(tmp_path, checkpoint, lp, 40.0 if (checkpoint, lp) == winner else 30.0 + float(lp))
    chosen = select(tmp_path)
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.split() == [*winner, "40.0"]
    assert select(tmp_path, "--show").stdout == chosen.stdout
    choice = recorded(tmp_path)
    assert (choice["checkpoint"], choice["length_penalty"], choice["beam"]) == (*winner, 5)
    assert choice["val_record"] == f"val_{winner[0]}_lp{winner[1]}.json"
    table = (tmp_path / "val_table.txt").read_text(encoding="utf-8").splitlines()
    assert len(table) == 6 and f"checkpoint {winner[0]}" in table[0]


def test_a_folder_without_val_records_is_refused_and_left_as_it_was(tmp_path):
    for args in ((tmp_path,), (tmp_path, "--show")):
        refused = select(*args)
        assert refused.returncode == 2
        assert refused.stderr.startswith("error: ") and "Traceback" not in refused.stderr
    assert list(tmp_path.iterdir()) == []


def test_several_directions_share_the_setting_best_on_their_mean_not_the_best_of_one(tmp_path):
    # de-en is best with (best, 0.6); the mean over both directions is best with (averaged, 1.0)
    scores = {
        "de-en": {("best", "0.6"): 40.0, ("averaged", "1.0"): 38.0},
        "en-de": {("best", "0.6"): 30.0, ("averaged", "1.0"): 33.0},
    }
    folders = []
    for direction, rows in scores.items():
        folders.append(tmp_path / direction)
        folders[-1].mkdir()
        for (checkpoint, lp), bleu in rows.items():
            val_record(folders[-1], checkpoint, lp, bleu)
    chosen = select("--mean", tmp_path, *folders)
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.split() == ["averaged", "1.0", "35.5"]
    assert select(tmp_path, "--show").stdout == chosen.stdout
    assert recorded(tmp_path)["val_bleu_by_direction"] == {"de-en": 38.0, "en-de": 33.0}


def test_directions_decoded_with_different_candidates_are_refused(tmp_path):
    for direction, lp in (("de-en", "0.6"), ("en-de", "1.0")):
        (tmp_path / direction).mkdir()
        val_record(tmp_path / direction, "best", lp, 30.0)
    refused = select("--mean", tmp_path, tmp_path / "de-en", tmp_path / "en-de")
    assert refused.returncode == 2 and refused.stderr.startswith("error: ")
    assert not (tmp_path / "selection.json").exists()
