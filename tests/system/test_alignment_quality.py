"""`python -m experiments.alignment_quality.alignment_quality` runs end to end on the tiny run: its
table has the three rows, the numbers lie in their ranges, the JSON holds them, eflomal's own links
place every tag exactly (the expected span is read off them), and one seed plants the same tags."""

from __future__ import annotations

import json

import pytest

from experiments.alignment_quality.alignment_quality import ROWS, main, plant_tags, reference_links
from seq2seq.markup.parse import HTML, parse

pytestmark = pytest.mark.slow

LINES = 40


@pytest.fixture
def val(tiny_run, tmp_path):
    """The first LINES training pairs as the measured set, the rest as more text for eflomal."""
    pytest.importorskip("eflomal", reason="the reference alignments are eflomal's: pip install s2s[align]")
    paths = {}
    for side in ("src", "tgt"):
        lines = (tiny_run.data / f"train.{side}").read_text(encoding="utf-8").splitlines()
        for name, part in (("val", lines[:LINES]), ("more", lines[LINES:])):
            paths[name, side] = tmp_path / f"{name}.{side}"
            paths[name, side].write_text("\n".join(part) + "\n", encoding="utf-8")
    return paths


@pytest.mark.parametrize("engine", ["s2s", "ctranslate2"])
def test_the_table_and_the_json_hold_the_three_rows(tiny_run, val, tmp_path, capsys, engine):
    if engine == "ctranslate2":
        pytest.importorskip("ctranslate2", reason="CTranslate2 publishes no wheel for this platform")
    out = tmp_path / "quality.json"
    argv = [str(tiny_run.run), "--src", str(val["val", "src"]), "--ref", str(val["val", "tgt"])]
    argv += ["--engine", engine]
    argv += ["--align-with", str(val["more", "src"]), str(val["more", "tgt"]), "--bleu", "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    rows = {line.split("|")[1].strip() for line in printed.splitlines() if line.startswith("| ")}
    assert set(ROWS) <= rows
    assert (
        "BLEU, tagged and tags stripped" in printed
        and "Command: python -m experiments.alignment_quality.alignment_quality" in printed
    )
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["lines"] == LINES and 0 < results["tagged_lines"] <= LINES
    assert all(0.0 <= results["aer"][k] <= 1.0 for k in ("aer", "precision", "recall"))
    assert all(0.0 <= results["exact"][row] <= 100.0 for row in ROWS)
    assert results["exact"][ROWS[1]] == 100.0  # the expected span is what eflomal's links give
    assert 0.0 <= results["bleu"]["tagged"] <= 100.0 and "tok:13a" in results["bleu"]["signature"]
    sources = val["val", "src"].read_text(encoding="utf-8").splitlines()
    planted = [p for p in results["planted"] if p is not None]
    assert len(planted) == results["tagged_lines"]
    for marked, source in zip(results["planted"], sources, strict=True):
        if marked is not None:  # one element, around 1-3 words, and the line's words as they were
            line = parse(marked, HTML)
            assert line.text == " ".join(source.split()) and len(line.tags) == 1
            assert 1 <= line.tags[0].end - line.tags[0].start <= 3


def test_one_seed_plants_the_same_tags(val):
    src = val["val", "src"].read_text(encoding="utf-8").splitlines()
    ref = val["val", "tgt"].read_text(encoding="utf-8").splitlines()
    links = reference_links(src, ref, None)  # eflomal has no seed of ours: align once, plant twice
    assert plant_tags(src, links, seed=1) == plant_tags(src, links, seed=1)
    assert any(p is not None for p in plant_tags(src, links, seed=1))


def test_line_counts_that_differ_are_refused(tiny_run, val, capsys):
    argv = [str(tiny_run.run), "--src", str(val["val", "src"]), "--ref", str(val["more", "tgt"])]
    assert main(argv) == 2
    assert "error: " in capsys.readouterr().err
