"""An optional dependency that is installed but broken is one line, never a traceback: every command
says what failed to import and what still works, `--version` included, and the commands that do not
need it work. Here CTranslate2, whose import fails (as a wheel built for another CPU, or a missing
shared library, makes it fail), put first on the path of a fresh `s2s` process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TrainedRun

pytestmark = pytest.mark.slow

FAILURE = "libctranslate2.so.4: cannot open shared object file"


def s2s(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`s2s ARGS` in a process whose `import ctranslate2` fails as a broken install's does."""
    broken = tmp_path / "broken" / "ctranslate2"
    broken.mkdir(parents=True, exist_ok=True)
    (broken / "__init__.py").write_text(f"raise ImportError({FAILURE!r})\n", encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(broken.parent), os.environ.get("PYTHONPATH", "")]),
    }
    env["S2S_CACHE_DIR"] = str(tmp_path / "cache")
    command = [sys.executable, "-m", "seq2seq", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, timeout=300)


def test_version_says_what_failed_to_import(tmp_path):
    result = s2s(tmp_path, "--version")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "cannot be imported" in result.stdout and FAILURE in result.stdout
    assert "--engine auto: s2s" in result.stdout


@pytest.mark.parametrize("engine", ["auto", "s2s"])
def test_translate_works_with_s2s_s_decoder_and_says_why_in_one_line(tiny_run: TrainedRun, tmp_path, engine):
    result = s2s(tmp_path, "translate", str(tiny_run.run), "--engine", engine, stdin="red cat\n\nblue bird\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 3 and "Traceback" not in result.stderr
    said = [line for line in result.stderr.splitlines() if "cannot be imported" in line]
    assert len(said) == (1 if engine == "auto" else 0), result.stderr


def test_asking_for_the_broken_engine_is_one_error_line(tiny_run: TrainedRun, tmp_path):
    result = s2s(tmp_path, "translate", str(tiny_run.run), "--engine", "ctranslate2", stdin="red cat\n")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and FAILURE in result.stderr
    assert "Traceback" not in result.stderr
