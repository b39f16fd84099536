"""`s2s cache list` and `s2s cache clear`: what the cache holds, removed as asked, and nothing else."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from tests.conftest import TrainedRun
from tests.helpers import run_cli

pytest.importorskip("ctranslate2", reason="CTranslate2 has no wheel for this platform")
from seq2seq.ct2.export_cache import cached_export  # noqa: E402


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_list_names_each_entry_s_run_checkpoint_compute_type_and_size_then_the_total(
    tiny_run: TrainedRun, root
):
    result = run_cli("cache", "list")
    assert result.exit_code == 0 and result.stdout == f"{root}: 0 exports, 0 bytes\n"
    entry = cached_export(tiny_run.run)
    result = run_cli("cache", "list")
    assert result.exit_code == 0, result.output
    heading, columns, line = result.stdout.splitlines()
    assert heading.startswith(f"{root}: 1 export, ") and "KiB" in heading
    assert line.endswith(f"best.pt     {tiny_run.run.resolve()}") and f"  {entry.compute_type}  " in line
    assert time.strftime("%Y-%m-%d") in line and columns.split()[:4] == [
        "created",
        "size",
        "compute",
        "shortlist",
    ]


def test_clear_removes_the_entries_of_one_run_or_older_ones_only(tiny_run: TrainedRun, root, tmp_path):
    entry = cached_export(tiny_run.run).path
    for args in (["cache", "clear", str(tmp_path / "other")], ["cache", "clear", "--older-than", "1"]):
        result = run_cli(*args)
        assert result.exit_code == 0 and result.stdout.startswith("removed 0 cached export(s)")
        assert entry.is_dir()
    result = run_cli("cache", "clear", str(tiny_run.run), "--older-than", "0")
    assert result.exit_code == 0 and result.stdout.startswith("removed 1 cached export(s)")
    assert list((root / "ctranslate2").iterdir()) == [] and tiny_run.run.is_dir()


def test_clear_leaves_an_entry_another_process_is_making_and_takes_what_a_killed_one_left(
    tiny_run: TrainedRun, root
):
    entry = cached_export(tiny_run.run).path
    left = entry.parent / ".0123456789abcdef01234567.x1y2.tmp"  # a maker killed half-way
    (left / "int8").mkdir(parents=True)
    fd = os.open(entry.parent / f"{entry.name}.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another s2s is making it again
        result = run_cli("cache", "clear")
    finally:
        os.close(fd)
    assert result.exit_code == 0 and result.stdout.startswith("removed 1 cached export(s)")
    assert f"left {entry}: another s2s is making it" in result.stderr
    assert entry.is_dir() and not left.exists() and not (root / "sha256").exists()
    assert run_cli("cache", "clear").exit_code == 0 and list((root / "ctranslate2").iterdir()) == []


@pytest.mark.parametrize("days", ["-1", "nan", "inf", "many"])
def test_a_bad_option_is_an_error_line_and_changes_nothing(tiny_run: TrainedRun, root, days):
    entry = cached_export(tiny_run.run).path
    result = run_cli("cache", "clear", "--older-than", days)
    assert result.exit_code == 2 and result.output.startswith("error: ") and "Traceback" not in result.output
    assert "--older-than" in result.output and entry.is_dir()
