"""The table of docs/augmentation.md's experiment is made by `python -m
experiments.augmentation.augment_table OUT` from what experiments/augmentation/augment_quality.sh
leaves: each run's `s2s evaluate --augment` records and the paired bootstrap of the two on each set as
given. Here on the tiny run, scored twice as the two arms."""

from __future__ import annotations

import shutil

import pytest

from experiments.augmentation.augment_table import SETS, main
from tests.helpers import run_cli

pytestmark = pytest.mark.slow


def test_the_table_has_a_row_per_set_and_copy_and_the_bootstrap(tiny_run, tmp_path, capsys):
    data = tiny_run.data
    for arm in ("off", "on"):
        (tmp_path / arm).mkdir()
    for name in SETS:
        out = tmp_path / "off" / f"{name}.hyp"
        result = run_cli(
            "evaluate", str(tiny_run.run), "--src", str(data / "valid.src"), "--ref", str(data / "valid.tgt"),
            "--engine", "s2s", "--augment", "upper,title,typos,nopunct", "--out", str(out),
            "--json", str(tmp_path / "off" / f"{name}.json"),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        for path in (tmp_path / "off").glob(f"{name}.*"):
            shutil.copy(path, tmp_path / "on" / path.name)
        result = run_cli(
            "evaluate", "--hyp", str(out), "--hyp", str(tmp_path / "on" / f"{name}.hyp"),
            "--ref", str(data / "valid.tgt"), "--json", str(tmp_path / f"{name}.bootstrap.json"),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    main([str(tmp_path)])
    table = capsys.readouterr().out
    rows = [line for line in table.splitlines() if line.startswith(("| val", "| test"))]
    assert len(rows) == 2 * 5  # each set as given and its four copies
    assert all(row.count("|") == 7 for row in rows)
    assert "(+0.00)" not in rows[0] and "BLEU signature: nrefs:1" in table
    assert table.count("paired bootstrap") == 2 * 3  # BLEU, chrF, TER on each set
