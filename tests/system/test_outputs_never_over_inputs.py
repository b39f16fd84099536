"""No command writes over a file it reads: an output that names one of the command's
inputs, through any path or link, or a file of the run, is refused (exit 2) and the input is unchanged;
`train --overwrite` refuses to clear a run directory holding its own data."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, write_corpus
from tests.helpers import digest, run_cli


def output_cases(run: Path, tmp: Path) -> list[tuple[list[str], Path]]:
    """(command, the input file it must leave untouched) for every command that takes an output path."""
    src, ref = write_corpus(tmp, "test", 6, seed=5)
    hyp = tmp / "hyp.txt"
    hyp.write_text(ref.read_text())
    link = tmp / "link.txt"
    link.symlink_to(src)
    report = tmp / "report"
    report.mkdir()
    page = report / "index.html"
    page.write_text(ref.read_text())
    best = run / "checkpoints" / "best.pt"
    evaluate = ["evaluate", str(run), "--src", str(src), "--ref", str(ref)]
    return [
        (["translate", str(run), "-i", str(src), "-o", str(src)], src),
        (["translate", str(run), "-i", str(src), "-o", str(link)], src),
        (["translate", str(run), "-i", str(src), "-o", str(run / "config.yaml")], run / "config.yaml"),
        ([*evaluate, "--out", str(ref)], ref),
        ([*evaluate, "--out", str(src)], src),
        ([*evaluate, "--json", str(ref)], ref),
        ([*evaluate, "--out", str(run / "tokenizer" / "spm.model")], run / "tokenizer" / "spm.model"),
        (["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json", str(hyp)], hyp),
        (["evaluate", "--hyp", str(hyp), "--ref", str(page), "--report", str(report)], page),
        (["average", str(run), "--last", "1", "--output", str(best.with_suffix(""))], best),
        (
            ["average", str(run), "--last", "1", "--output", str(run / "checkpoints" / "last")],
            run / "checkpoints" / "last.pt",
        ),
    ]


@pytest.mark.parametrize("case", range(11))
def test_no_command_writes_over_a_file_it_reads(run_copy, tmp_path, case):
    run = run_copy.run
    (tmp_path / "files").mkdir()
    args, victim = output_cases(run, tmp_path / "files")[case]
    before = digest(victim)
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert "error:" in result.output
    assert digest(victim) == before


def test_two_outputs_on_one_file_are_refused(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("a b c\n")
    out = tmp_path / "same.json"
    result = run_cli(
        "evaluate", "--hyp", str(ref), "--ref", str(ref), "--json", str(out), "--report", str(tmp_path)
    )
    assert result.exit_code == 0  # distinct files are fine
    result = run_cli(
        "evaluate",
        "--hyp",
        str(ref),
        "--ref",
        str(ref),
        "--json",
        str(tmp_path / "index.html"),
        "--report",
        str(tmp_path),
    )
    assert result.exit_code == 2 and "name the same file" in result.output


def test_overwrite_refuses_to_delete_data_inside_the_run_directory(run_copy):
    config, run = run_copy.config, run_copy.run
    raw = yaml.safe_load(config.read_text())
    inside = run / "corpus.src"
    shutil.copy(raw["data"]["train_src"], inside)
    raw["data"]["train_src"] = str(inside)
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config), "--overwrite")
    assert result.exit_code == 2 and "would delete data.train_src" in result.output
    assert inside.is_file() and (run / "checkpoints" / "last.pt").is_file()


def test_stdout_redirected_onto_the_input_is_refused(tiny_run, tmp_path):
    run = tiny_run.run
    src = tmp_path / "src.txt"
    src.write_text("red cat\n")
    with src.open("ab") as appended:  # `s2s translate RUN -i src.txt >> src.txt`
        result = subprocess.run(
            [sys.executable, "-m", "seq2seq", "translate", str(run), "-i", str(src)],
            stdout=appended,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=120,  # reading its own output would never end
        )
    assert result.returncode == 2 and b"stdout is the input file" in result.stderr
    assert src.read_text() == "red cat\n"
