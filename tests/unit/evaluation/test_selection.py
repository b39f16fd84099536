"""Decode settings chosen on val (`seq2seq.evaluation.selection`, `s2s select`): the best BLEU wins
whatever order the records come in; a setting evaluated on several sets (directions) is scored by
its mean; the choice reads back as it was written; records that cannot be chosen from are refused:
records of other sets or metrics, scores that are not finite numbers, and a --json that is a record.
Asked `--within` a margin, the cheapest candidate that close to the best is chosen instead."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path

import pytest

from seq2seq.evaluation.selection import SelectionError, candidates, read_selection, write_selection
from tests.helpers import run_cli

SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"


def record(
    folder: Path,
    name: str,
    checkpoint: str,
    penalty: float,
    bleu: float,
    sets: tuple[str, str] = ("val.de", "val.en"),
    signature: str = SIGNATURE,
    rerank: dict[str, object] | None = None,
    beam: int = 5,
    members: int = 1,
) -> Path:
    """What `s2s evaluate --json` writes of a run's translations, reduced to what is chosen from: the
    set (its source and reference, named by `sets`) by the sha256 of the files, as the record has it."""
    path = folder / f"{name}.json"
    src, ref = (
        {"path": f"/data/{n}", "sha256": hashlib.sha256(n.encode()).hexdigest(), "lines": 9} for n in sets
    )
    raw = {
        "references": [ref],
        "source": src,
        "systems": [{"scores": {"bleu": {"score": bleu, "signature": signature}}}],
        "decode": {"beam": beam, "length_penalty": penalty, **(rerank or {})},
        "model": {
            "checkpoints": [{"path": f"/runs/{m}/checkpoints/{checkpoint}.pt"} for m in "abc"[:members]]
        },
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


@pytest.mark.parametrize("winner", [0.0, 0.1, 0.3])
def test_a_reranked_beam_is_a_candidate_of_its_own_and_reads_back(tmp_path: Path, winner: float) -> None:
    paths = [
        record(
            tmp_path,
            f"best_{w}",
            "best",
            1.0,
            40.0 if w == winner else 35.0 + w,
            rerank={"rerank": "/runs/back", "rerank_weight": w} if w else None,
        )
        for w in (0.0, 0.1, 0.3)
    ]
    ranked = candidates(paths)
    assert len(ranked) == 3 and ranked[0].val_bleu == 40.0
    assert (ranked[0].rerank, ranked[0].rerank_weight) == (
        (("/runs/back",), (winner,)) if winner else ((), ())
    )
    choice = tmp_path / "selection.json"
    result = run_cli("select", *map(str, paths), "--json", str(choice))
    assert result.exit_code == 0, result.output
    assert result.stdout.split()[3:] == (["/runs/back", f"{winner:g}"] if winner else [])
    assert read_selection(choice) == ranked[0]
    raw = json.loads(choice.read_text(encoding="utf-8"))
    assert (raw["rerank"], raw["rerank_weight"]) == (("/runs/back", winner) if winner else ("", 0.0))
    for key in ("rerank", "rerank_weight"):  # a choice written before reranking was a candidate
        del raw[key]
    choice.write_text(json.dumps(raw), encoding="utf-8")
    assert (read_selection(choice).rerank, read_selection(choice).rerank_weight) == ((), ())


def test_a_beam_reranked_by_several_runs_is_one_candidate_that_costs_each_and_reads_back(
    tmp_path: Path,
) -> None:
    """`--rerank A --rerank B` records both runs and weights as lists: one setting (per order and
    weights), which counts a model for each run where `--within` weighs the cost."""
    two = {"rerank": ["/runs/back", "/runs/r2l"], "rerank_weight": [0.2, 3.0]}
    paths = [
        record(tmp_path, "two", "best", 1.0, 40.0, rerank=two),
        record(tmp_path, "one", "best", 1.0, 39.9, rerank={"rerank": "/runs/r2l", "rerank_weight": 3.0}),
        record(tmp_path, "plain", "best", 1.0, 39.0),
    ]
    ranked = candidates(paths)
    assert (ranked[0].rerank, ranked[0].rerank_weight) == (("/runs/back", "/runs/r2l"), (0.2, 3.0))
    choice = tmp_path / "selection.json"
    result = run_cli("select", *map(str, paths), "--json", str(choice))
    assert result.exit_code == 0, result.output
    assert result.stdout.split()[3:] == ["/runs/back", "0.2", "/runs/r2l", "3"]
    assert "reranked by /runs/back at 0.2, /runs/r2l at 3" in result.output
    raw = json.loads(choice.read_text(encoding="utf-8"))
    assert (raw["rerank"], raw["rerank_weight"]) == (two["rerank"], two["rerank_weight"])
    assert read_selection(choice) == ranked[0]
    result = run_cli("select", *map(str, paths), "--within", "0.5")
    assert result.exit_code == 0 and result.stdout.split()[3:] == ["/runs/r2l", "3"]  # one model fewer
    mismatched = record(tmp_path, "odd", "best", 1.0, 40.0, rerank=two | {"rerank_weight": [0.2]})
    with pytest.raises(SelectionError, match="2 reranking runs with 1 weights"):
        candidates([mismatched])


# (name, beam, ensemble members, reranked, val BLEU): the cheaper a setting, the lower its score
COSTLY = [
    ("greedy", 1, 1, False, 40.0),
    ("beam2", 2, 1, False, 40.3),
    ("beam5", 5, 1, False, 40.5),
    ("reranked", 5, 1, True, 40.9),
    ("pair_greedy", 1, 2, False, 41.0),
    ("pair", 5, 2, False, 41.2),
]


def costly_records(folder: Path) -> list[Path]:
    rerank = {"rerank": "/runs/back", "rerank_weight": 0.2}
    return [
        record(folder, n, "best", 1.0, bleu, beam=beam, members=members, rerank=rerank if reranked else None)
        for n, beam, members, reranked, bleu in COSTLY
    ]


@pytest.mark.parametrize(
    ("within", "chosen"),
    [
        (0.0, "pair"),
        (0.1, "pair"),
        (0.3, "pair_greedy"),
        (0.7, "beam5"),
        (0.9, "beam2"),
        (1.2, "greedy"),
        (50, "greedy"),
    ],
)
def test_within_a_margin_the_cheapest_close_enough_is_chosen(
    tmp_path: Path, within: float, chosen: str
) -> None:
    """Fewer models decoding (ensemble members, a reranking model) come first, then a smaller beam;
    nothing further than `within` from the best val BLEU is a candidate, and a margin met exactly
    counts (41.2 - 0.9 is 40.3, though not in floats); the ranking is kept whole by BLEU."""
    paths = costly_records(tmp_path)
    for order in (paths, paths[::-1]):
        choice = tmp_path / "choice.json"
        result = run_cli("select", *map(str, order), "--json", str(choice), "--within", f"{within:g}")
        assert result.exit_code == 0, result.output
        want = next(c for c in COSTLY if c[0] == chosen)
        got = read_selection(choice)
        assert (got.beam, len(got.checkpoints), bool(got.rerank), got.val_bleu) == want[1:]
        raw = json.loads(choice.read_text(encoding="utf-8"))
        assert raw["within"] == within and [c["val_bleu"] for c in raw["candidates"]] == sorted(
            (c[4] for c in COSTLY), reverse=True
        )
        assert result.stdout.split()[2] == f"{want[4]:.2f}"
        assert ("chosen, the cheapest within" in result.stderr) == (chosen != "pair")
        choice.unlink()


@pytest.mark.parametrize("within", ["-0.5", "nan", "101"])
def test_a_margin_out_of_range_is_refused_and_writes_nothing(tmp_path: Path, within: str) -> None:
    paths = costly_records(tmp_path)
    result = run_cli("select", *map(str, paths), "--json", str(tmp_path / "choice.json"), "--within", within)
    assert result.exit_code == 2 and "error: " in result.output and "--within" in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "choice.json").exists()


def test_several_sets_choose_by_their_mean_not_by_the_best_of_one(tmp_path: Path) -> None:
    # de-en is best with (best, 0.6); the mean over both directions is best with (averaged, 1.0)
    scores = {
        "de-en": {("best", 0.6): 40.0, ("averaged", 1.0): 38.0},
        "en-de": {("best", 0.6): 30.0, ("averaged", 1.0): 33.0},
    }
    paths = [
        record(tmp_path, f"{d}_{c}_{p}", c, p, bleu, (f"val.{d}", f"val.{d}.ref"))
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


@pytest.mark.parametrize("spelling", ["same", "relative", "symlink", "hard link"])
def test_select_output_is_never_one_of_its_inputs(tmp_path: Path, spelling: str, monkeypatch) -> None:
    paths = [record(tmp_path, f"best_{p}", "best", p, 30.0 + p) for p in (0.6, 1.0)]
    before = [p.read_bytes() for p in paths]
    out = {"same": paths[1], "relative": Path("sub/../best_1.0.json"), "symlink": tmp_path / "link.json"}
    out["hard link"] = tmp_path / "hard.json"
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.json").symlink_to(paths[1])
    os.link(paths[1], tmp_path / "hard.json")
    monkeypatch.chdir(tmp_path)
    result = run_cli("select", *map(str, paths), "--json", str(out[spelling]))
    assert result.exit_code == 2 and "error: --json" in result.output, result.output
    assert "never writes over a file it reads" in result.output and "Traceback" not in result.output
    assert [p.read_bytes() for p in paths] == before


OTHER = {  # what the second setting's record measured, other than the first's
    "another source": {"sets": ("test.de", "val.en")},
    "another reference": {"sets": ("val.de", "test.en")},
    "another set": {"sets": ("test.de", "test.en")},
    "another metric": {"signature": SIGNATURE.replace("tok:13a", "tok:intl")},
}


@pytest.mark.parametrize("other", OTHER)
@pytest.mark.parametrize("directions", [1, 2])
def test_select_refuses_records_of_different_sets(tmp_path: Path, other: str, directions: int) -> None:
    """Each setting's records must measure the sets the others' do, by the same metric, to be compared;
    a setting decoded on another set (the test set beside val's) is no candidate."""
    sets = [("val.de", "val.en"), ("val.en", "val.de")][:directions]
    paths = [record(tmp_path, f"best_{i}", "best", 1.0, 30.0, s) for i, s in enumerate(sets)]
    paths += [record(tmp_path, f"last_{i}", "last", 1.0, 30.0, s) for i, s in enumerate(sets[1:], 1)]
    paths.append(record(tmp_path, "last_0", "last", 1.0, 45.0, **OTHER[other]))
    with pytest.raises(SelectionError, match="different sets or metrics") as refused:
        candidates(paths)
    assert str(paths[0]) in str(refused.value) and str(paths[-1]) in str(refused.value)
    assert all(str(p) not in str(refused.value) for p in paths[1:-1])  # only the records that differ
    result = run_cli("select", *map(str, paths), "--json", str(tmp_path / "choice" / "selection.json"))
    assert result.exit_code == 2 and "error: " in result.output and "Traceback" not in result.output
    assert not (tmp_path / "choice").exists()


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, "nan", "-inf"],
    ids=["NaN", "Infinity", "-Infinity", "'nan'", "'-inf'"],
)
@pytest.mark.parametrize("field", ["bleu", "length_penalty"])
@pytest.mark.parametrize("first", [True, False])
def test_select_refuses_scores_that_are_not_finite(tmp_path: Path, value, field: str, first: bool) -> None:
    """A record whose BLEU (or length penalty) is NaN or infinite is refused, naming it, wherever it
    comes among the records; so is a choice that holds one."""
    good = record(tmp_path, "good", "best", 0.6, 30.0)
    bad = record(tmp_path, "bad", "last", 1.0, 30.0)
    raw = json.loads(bad.read_text(encoding="utf-8"))
    if field == "bleu":
        raw["systems"][0]["scores"]["bleu"]["score"] = value
    else:
        raw["decode"]["length_penalty"] = value
    bad.write_text(json.dumps(raw), encoding="utf-8")
    paths = [bad, good] if first else [good, bad]
    with pytest.raises(SelectionError, match=f"{re.escape(str(bad))}: .*not a finite number"):
        candidates(paths)
    result = run_cli("select", *map(str, paths))
    assert result.exit_code == 2 and f"error: {bad}" in result.output and result.stdout == ""
    choice = tmp_path / "selection.json"
    write_selection(choice, candidates([good]))
    raw = json.loads(choice.read_text(encoding="utf-8"))
    raw["val_bleu" if field == "bleu" else "length_penalty"] = value
    choice.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(SelectionError, match="not a finite number.*choose again with `s2s select"):
        read_selection(choice)
