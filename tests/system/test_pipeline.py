"""`s2s pipeline` on the quickstart example, run once per session (`quickstart_pipeline`): the table
holds every model with its scores' signatures; a rerun skips every step and changes nothing, and so
does `--dry-run`; a changed setting refuses its step and those after it, before anything runs; the
file is checked whole first; a pipeline killed in a step continues and ends with the same table as
the run that was never interrupted. One xdist group: the tests share the workspace, the last one
changes it and leaves it whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import PipelineRun, pipeline_env
from tests.helpers import run_cli, tree_digest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pipeline")]

STEPS = [
    "backward", "back_translation", "teacher", "select_teacher", "distillation", "filter", "student",
    "select_student", "export", "evaluate",
]  # fmt: skip


@pytest.fixture
def here(quickstart_pipeline: PipelineRun, monkeypatch: pytest.MonkeyPatch) -> PipelineRun:
    """The shared pipeline, with the working directory its paths are relative to."""
    monkeypatch.chdir(quickstart_pipeline.directory)
    return quickstart_pipeline


def changed(run: PipelineRun, name: str, change) -> Path:
    """A copy of the example, changed by `change(raw)`, beside it."""
    raw = yaml.safe_load(run.file.read_text(encoding="utf-8"))
    change(raw)
    path = run.file.with_name(name)
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def test_the_table_has_every_model_with_signed_scores_speed_and_size(here: PipelineRun) -> None:
    rows = here.table["rows"]
    assert [(r["model"], r["test"]) for r in rows] == [
        ("teacher", "test"),
        ("student", "test"),
        ("export", "test"),
    ]
    assert all(r["sentences_per_second"] > 0 and r["parameters"] > 0 and 0 <= r["bleu"] <= 100 for r in rows)
    assert (
        rows[2]["engine"].startswith("ctranslate2 (int8") and rows[2]["parameters"] == rows[1]["parameters"]
    )
    assert (
        rows[1]["parameters"] < rows[0]["parameters"]
    )  # the student keeps one of the teacher's decoder layers
    choice = json.loads((here.workspace / "select_teacher" / "selection.json").read_text(encoding="utf-8"))
    assert sorted(c["rerank_weight"] for c in choice["candidates"]) == [0, 0, 0.5, 0.5]  # val chose
    signatures = here.table["signatures"]
    assert signatures["bleu"].startswith("nrefs:1|") and signatures["chrf"].startswith("nrefs:1|")
    markdown = (here.workspace / "table.md").read_text(encoding="utf-8")
    assert signatures["bleu"] in markdown and signatures["chrf"] in markdown
    assert [s["step"] for s in here.table["steps"]] == STEPS and all(
        s["disk_bytes"] > 0 for s in here.table["steps"]
    )
    assert sorted(p.stem for p in (here.workspace / "logs").iterdir()) == sorted(STEPS)


def test_a_rerun_skips_every_step_quickly_and_changes_nothing(here: PipelineRun) -> None:
    before = tree_digest(here.workspace)
    started = time.monotonic()
    result = run_cli("pipeline", str(here.file))
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 20
    for i, step in enumerate(STEPS):
        assert f"[{i + 1}/{len(STEPS)}] {step}: skipped" in result.output
    assert "| export | test | ctranslate2" in result.stdout
    assert tree_digest(here.workspace) == before


def test_a_dry_run_prints_each_step_and_writes_nothing(here: PipelineRun, tmp_path: Path) -> None:
    before = tree_digest(here.workspace)
    result = run_cli("pipeline", str(here.file), "--dry-run")
    assert result.exit_code == 0, result.output
    assert [line.split()[:2] for line in result.stdout.splitlines()] == [[step, "skip"] for step in STEPS]
    fresh = changed(here, "fresh.yaml", lambda raw: raw.update(workspace=str(tmp_path / "new")))
    result = run_cli("pipeline", str(fresh), "--dry-run", "--until", "select_teacher")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[:3] for line in lines if not line.startswith(" ")] == [
        [step, "to", "run"] for step in STEPS[:4]
    ]
    assert lines[1].startswith("  python -m seq2seq train configs/quickstart.yaml --set run_dir=")
    assert any(line.startswith("  python -m seq2seq select ") for line in lines)
    assert not (tmp_path / "new").exists() and tree_digest(here.workspace) == before


def test_a_changed_setting_refuses_its_step_and_the_ones_after_it(here: PipelineRun) -> None:
    def other_student(raw: dict) -> None:
        raw["steps"]["student"]["set"] = ["model.decoder_layers=1", "train.lr=0.001"]

    before = tree_digest(here.workspace)
    path = changed(here, "other_student.yaml", other_student)
    result = run_cli("pipeline", str(path))
    assert result.exit_code == 2
    message = result.output[result.output.index("error: ") :]
    assert message.startswith(
        f"error: step student was done otherwise than {path} asks now:\n  train.lr: 0.005 -> 0.001"
    )
    assert "the steps after it depend on it: select_student, export, evaluate" in message
    assert "--redo student" in message and "Traceback" not in result.output
    shown = run_cli("pipeline", str(path), "--dry-run").stdout.splitlines()
    assert [line.split()[1] for line in shown if not line.startswith(" ")] == ["skip"] * 6 + ["refused"] * 4
    assert tree_digest(here.workspace) == before


def test_a_student_given_more_steps_continues_where_it_finished(here: PipelineRun) -> None:
    def longer_student(raw: dict) -> None:
        raw["steps"]["student"]["set"] = ["model.decoder_layers=1", "train.max_steps=25"]

    before = tree_digest(here.workspace)
    path = changed(here, "longer_student.yaml", longer_student)
    shown = run_cli("pipeline", str(path), "--dry-run").stdout.splitlines()
    student = next(line for line in shown if line.startswith("student "))
    assert "to run" in student and "continues (--resume)" in student
    assert any(line.strip().endswith("train.max_steps=25 --resume") for line in shown)
    assert tree_digest(here.workspace) == before


def test_the_file_is_checked_whole_before_any_step_runs(here: PipelineRun, tmp_path: Path) -> None:
    def broken(raw: dict) -> None:
        raw.update(workspace=str(tmp_path / "new"), tgt_lang="English")
        raw["steps"]["techer"] = raw["steps"].pop("teacher", {})
        raw["steps"]["filter"]["kep"] = 0.5

    result = run_cli("pipeline", str(changed(here, "broken.yaml", broken)))
    assert result.exit_code == 2
    assert "steps.techer: unknown key (did you mean steps.teacher?)" in result.output
    assert "steps.filter.kep: unknown key (did you mean steps.filter.keep?)" in result.output
    result = run_cli(
        "pipeline",
        str(changed(here, "wrong.yaml", lambda raw: raw.update(tgt_lang="English"))),
        "--until",
        "nothing",
    )
    assert result.exit_code == 2 and "tgt_lang: 'English' is not a language code" in result.output
    assert not (tmp_path / "new").exists()
    result = run_cli("pipeline", str(here.file), "--until", "studnet")
    assert result.exit_code == 2 and "studnet: no such step (did you mean student?)" in result.output


def test_an_export_is_evaluated_with_the_advised_out(here: PipelineRun, tmp_path: Path) -> None:
    asked = ["evaluate", str(here.workspace / "export"), "--src", "data/quickstart/valid.src"]
    asked += ["--ref", "data/quickstart/valid.tgt", "--json", str(tmp_path / "valid.json")]
    result = run_cli(*asked)
    assert result.exit_code == 2 and "nothing is written into: give --out FILE" in result.output
    result = run_cli(*asked, "--out", str(tmp_path / "valid.hyp"))
    assert result.exit_code == 0, result.output
    decode = json.loads((tmp_path / "valid.json").read_text(encoding="utf-8"))["decode"]
    assert decode["engine"] == "ctranslate2" and decode["shortlist"]


def test_a_damaged_record_is_redone_as_advised(here: PipelineRun) -> None:
    """The step is made again (the filter: its pairs as before), and nothing after it is."""
    record = here.workspace / "records" / "filter.json"
    kept = tree_digest(here.workspace / "filter")
    record.write_text("{", encoding="utf-8")
    result = run_cli("pipeline", str(here.file), "--dry-run")
    assert result.exit_code == 2 and "run the step again with --redo filter" in result.output
    again = subprocess.run(
        [sys.executable, "-m", "seq2seq", "pipeline", str(here.file), "--redo", "filter"],
        env=pipeline_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert tree_digest(here.workspace / "filter") == kept
    assert "[7/10] student: skipped" in again.stderr and "[10/10] evaluate: skipped" in again.stderr


def test_a_pipeline_killed_in_a_step_continues_to_the_same_table(here: PipelineRun) -> None:
    """Killed (SIGKILL to the pipeline and its command) in the evaluation, once it has scored one model
    again; run again, it skips every step done and ends with the table it had, speeds aside. (Which
    command continues a training, and how, is tests/unit/pipeline/test_step.py's.) Last in this file:
    it changes the shared workspace, and leaves it whole."""
    first = here.workspace / "evaluate" / "teacher.test.json"
    command = [sys.executable, "-m", "seq2seq", "pipeline", str(here.file), "--redo", "evaluate"]
    started = time.time()
    killed = subprocess.Popen(
        command,
        env=pipeline_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    while killed.poll() is None and first.stat().st_mtime < started:
        time.sleep(0.02)
    assert killed.poll() is None, "the pipeline ended before it was killed"
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert not (here.workspace / "records" / "evaluate.json").exists()  # it no longer says what is there
    again = subprocess.run(command[:-2], env=pipeline_env(), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "[9/10] export: skipped" in again.stderr and "[10/10] evaluate: score every model" in again.stderr
    table = json.loads((here.workspace / "table.json").read_text(encoding="utf-8"))

    def scores(data: dict) -> list[dict]:
        return [{k: v for k, v in row.items() if k != "sentences_per_second"} for row in data["rows"]]

    assert scores(table) == scores(here.table) and table["signatures"] == here.table["signatures"]
