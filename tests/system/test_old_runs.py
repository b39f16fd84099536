"""Runs made by an older s2s still work, and runs from a newer one are refused.

tests/fixtures/run_v0/ is a tiny run (150 steps) made by the code before the run directory had a
format version (commit a955a8d), with the greedy output that code gave, greedy.txt, from the command
in `OLD_OUTPUTS` (`s2s translate run -i data/valid.src -o NAME OPTIONS`); its beam output changed on
purpose when beam search's stopping rule and scores did (docs/decoding.md), and is no longer kept. It has no
prepared/ corpus, so resuming it prepares the corpus again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import load_config
from seq2seq.errors import RunDirError
from seq2seq.run.layout import RUN_FORMAT, RunDir
from tests.conftest import ROOT
from tests.helpers import run_cli

FIXTURE = ROOT / "tests" / "fixtures" / "run_v0"
MADE_IN = "/tmp/legacy/v0"  # where the fixture was made: its configs' paths start with it
# `--precision fp32`: the old code ran these with the default `auto`, which on a CPU then timed fp32
# against bf16 and kept the faster (it picked fp32 then); `auto` now takes bf16 on some CPUs
OLD_OUTPUTS = {"greedy.txt": ["--beam", "1", "--scores", "--checkpoint", "last", "--precision", "fp32"]}
BEAM = ["--nbest", "2", "--precision", "fp32"]


def copy_old_run(directory: Path) -> Path:
    """A copy of the fixture in `directory`/v0, its config paths rewritten (the run moved)."""
    home = directory / "v0"
    shutil.copytree(FIXTURE, home)
    for config in (home / "config.yaml", home / "run" / "config.yaml"):
        config.write_text(config.read_text().replace(MADE_IN, str(home)))
    return home


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    return copy_old_run(tmp_path)


def translate(home: Path, output: str, *options: str) -> Path:
    out = home / output
    result = run_cli(
        "translate", str(home / "run"), "-i", str(home / "data/valid.src"), "-o", str(out), *options
    )
    assert result.exit_code == 0, result.output
    return out


def test_the_fixture_is_a_run_without_a_format_version():
    assert "format" not in json.loads((FIXTURE / "run" / "inputs.json").read_text())
    assert RunDir(FIXTURE / "run").format_version() == 0
    assert not (FIXTURE / "run" / "prepared").exists()


def texts(path: Path) -> list[list[str]]:
    """Each line's translations, without their scores."""
    return [line.split("\t")[::2] for line in path.read_text(encoding="utf-8").splitlines()]


def test_an_old_run_translates_as_the_old_code_did(old_run: Path):
    """Greedy search gives the old code's words. Scores are not compared: they are now taken over the
    tokens the search may choose (renormalized, `search.next_scores`), which the old code did not."""
    got = translate(old_run, "new_greedy.txt", *OLD_OUTPUTS["greedy.txt"])
    assert texts(got) == texts(old_run / "greedy.txt")


def test_an_old_run_keeps_the_scoring_rule_it_was_made_with(old_run: Path, tmp_path: Path):
    """Its config has no `decode.length_norm`: it meant GNMT's rule then, and still does; a new config
    without the key gets today's default. --length-norm overrides either."""
    assert RunDir(old_run / "run").load_config().decode.length_norm == "gnmt"
    assert load_config(old_run / "config.yaml").decode.length_norm == "power"
    beam = BEAM
    default = texts(translate(old_run, "default.txt", *beam))
    assert default == texts(translate(old_run, "gnmt.txt", *beam, "--length-norm", "gnmt"))
    assert default != texts(translate(old_run, "power.txt", *beam, "--length-norm", "power"))  # it shows
    result = run_cli(
        "translate", str(old_run / "run"), "-i", str(old_run / "data/valid.src"), "--length-norm", "gnmy"
    )
    assert result.exit_code == 2 and "--length-norm 'gnmy': choose one of power, gnmt" in result.output


def test_an_old_run_resumes_and_then_translates(old_run: Path):
    config = old_run / "config.yaml"
    result = run_cli("train", str(config), "--resume", "--set", "train.max_steps=160")
    assert result.exit_code == 0, result.output
    run = RunDir(old_run / "run")
    assert load_checkpoint(run.checkpoint_path("last"))["progress"]["step"] == 160
    steps = [r["step"] for r in run.read_metrics() if r["kind"] == "train"]
    assert steps[0] == 1 and steps[-10:] == list(range(151, 161))  # continued from 150, nothing redone
    assert run.format_version() == RUN_FORMAT  # training into it recorded this code's format
    lines = translate(old_run, "after.txt").read_text().splitlines()
    assert len(lines) == len((old_run / "data/valid.src").read_text().splitlines())


def with_format(home: Path, version: int) -> Path:
    """Mark the run as made in format `version` (as a newer s2s would)."""
    inputs = home / "run" / "inputs.json"
    inputs.write_text(json.dumps(json.loads(inputs.read_text()) | {"format": version}))
    return inputs


def contents(run: Path) -> dict[Path, bytes]:
    """Every file of the run but the marker (`s2s train` writes its pid there when it takes the lock)."""
    return {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".s2s-run"}


def test_a_run_from_a_newer_s2s_is_refused_and_left_as_it_was(old_run: Path):
    with_format(old_run, RUN_FORMAT + 1)
    before = contents(old_run / "run")
    commands = {
        "translate": ["translate", str(old_run / "run"), "-i", str(old_run / "data/valid.src")],
        "resume": ["train", str(old_run / "config.yaml"), "--resume", "--set", "train.max_steps=160"],
    }
    for name, args in commands.items():
        result = run_cli(*args)
        assert result.exit_code == 2, (name, result.output)
        assert f"run format {RUN_FORMAT + 1}" in result.output and "upgrade s2s" in result.output, name
    assert contents(old_run / "run") == before


def test_a_run_of_this_format_is_read(tmp_path: Path, old_run: Path):
    with_format(old_run, RUN_FORMAT)
    assert RunDir(old_run / "run").load_config().run_dir == str(old_run / "run")
    fresh = RunDir(tmp_path / "fresh")
    fresh.path.mkdir()
    fresh.record_inputs(data={"train_src": "0" * 64})
    assert json.loads(fresh.inputs_file.read_text()) == {
        "format": RUN_FORMAT,
        "data": {"train_src": "0" * 64},
    }
    with_format(old_run, RUN_FORMAT + 1)
    with pytest.raises(RunDirError, match="newer s2s"):
        RunDir(old_run / "run").load_config()
