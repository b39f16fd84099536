"""Decode settings chosen on val (`seq2seq.evaluation.selection`, `s2s select`): the best BLEU wins
whatever order the records come in; a setting evaluated on several sets (directions) is scored by
its mean; the choice reads back as it was written; records that cannot be chosen from are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seq2seq.evaluation.selection import SelectionError, candidates, read_selection, write_selection
from tests.helpers import run_cli

SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"


def record(folder: Path, name: str, checkpoint: str, penalty: float, bleu: float) -> Path:
    """What `s2s evaluate --json` writes of a run's translations, reduced to what is chosen from."""
    path = folder / f"{name}.json"
    raw = {
        "systems": [{"scores": {"bleu": {"score": bleu, "signature": SIGNATURE}}}],
        "decode": {"beam": 5, "length_penalty": penalty},
        "model": {"checkpoints": [{"path": f"/runs/a/checkpoints/{checkpoint}.pt"}]},
    }
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


@pytest.mark.parametrize("winner", [("best", 0.6), ("averaged", 1.4), ("averaged", 1.0)])
def test_the_best_val_bleu_wins_in_any_order_and_reads_back(tmp_path: Path, winner) -> None:
    paths = [
        record(tmp_path, f"{c}_{p}", c, p, 40.0 if (c, p) == winner else 30.0 + p)
        for c in ("best", "averaged")
        for p in (0.6, 1.0, 1.4)
    ]
    for order in (paths, paths[::-1]):
        ranked = candidates(order)
        assert (Path(ranked[0].checkpoints[0]).stem, ranked[0].length_penalty) == winner
        assert ranked[0].val_bleu == 40.0 and ranked[0].beam == 5 and ranked[0].bleu_signature == SIGNATURE
        assert len(ranked) == 6 and [c.val_bleu for c in ranked] == sorted(
            (c.val_bleu for c in ranked), reverse=True
        )
    write_selection(tmp_path / "choice" / "selection.json", ranked)
    assert read_selection(tmp_path / "choice" / "selection.json") == ranked[0]


def test_several_sets_choose_by_their_mean_not_by_the_best_of_one(tmp_path: Path) -> None:
    # de-en is best with (best, 0.6); the mean over both directions is best with (averaged, 1.0)
    scores = {
        "de-en": {("best", 0.6): 40.0, ("averaged", 1.0): 38.0},
        "en-de": {("best", 0.6): 30.0, ("averaged", 1.0): 33.0},
    }
    paths = [
        record(tmp_path, f"{d}_{c}_{p}", c, p, bleu)
        for d, rows in scores.items()
        for (c, p), bleu in rows.items()
    ]
    best = candidates(paths)[0]
    assert (Path(best.checkpoints[0]).stem, best.length_penalty, best.val_bleu) == ("averaged", 1.0, 35.5)
    assert len(best.records) == 2


def test_settings_not_decoded_on_every_set_are_refused(tmp_path: Path) -> None:
    paths = [record(tmp_path, "a", "best", 0.6, 30.0), record(tmp_path, "b", "best", 0.6, 31.0)]
    paths.append(record(tmp_path, "c", "best", 1.0, 32.0))
    with pytest.raises(SelectionError, match="same sets"):
        candidates(paths)


def test_records_that_cannot_be_chosen_from_are_refused(tmp_path: Path) -> None:
    given = tmp_path / "given.json"  # an evaluation of --hyp files: nothing says what made them
    given.write_text(
        json.dumps(
            {
                "systems": [{"scores": {"bleu": {"score": 1.0, "signature": "s"}}}],
                "decode": None,
                "model": None,
            }
        )
    )
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    for path, why in (
        (given, "--hyp"),
        (broken, "not an `s2s evaluate --json` record"),
        (tmp_path / "gone.json", "not an"),
    ):
        with pytest.raises(SelectionError, match=why):
            candidates([path])
    with pytest.raises(SelectionError, match="no `s2s evaluate --json` records"):
        candidates([])
    with pytest.raises(SelectionError, match="s2s select"):
        read_selection(broken)


def test_a_damaged_choice_is_made_again_as_advised(tmp_path: Path) -> None:
    paths = [record(tmp_path, f"best_{p}", "best", p, 30.0 + p) for p in (0.6, 1.0)]
    choice = tmp_path / "selection.json"
    choice.write_text("{", encoding="utf-8")
    with pytest.raises(SelectionError, match="choose again with `s2s select RECORD.json ... --json FILE`"):
        read_selection(choice)
    result = run_cli("select", *map(str, paths), "--json", str(choice))
    assert result.exit_code == 0, result.output
    assert result.stdout == "/runs/a/checkpoints/best.pt 1 31.00\n"
    assert read_selection(choice).length_penalty == 1.0
