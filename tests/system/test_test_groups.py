"""The suite's xdist groups hold: under `--dist loadgroup` (pyproject's addopts) the tests of one
`xdist_group` run in one worker, so a session fixture their group shares (the pipeline run, the
readers' runs, the wheel) is built once. pytest-xdist 3.8 stops grouping, silently, under pytest 9.2,
which pyproject's dev extra therefore keeps out."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a pytest with two workers, as a process

PLANTED = """import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("i", range(6))
def test_planted(i):
    pass
"""


def test_the_tests_of_one_group_run_in_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_planted.py").write_text(PLANTED, encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v"]
    command += ["-p", "no:cacheprovider", "--rootdir", str(tmp_path), "test_planted.py"]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    workers = re.findall(r"^\[(gw\d+)\] .* PASSED test_planted\.py::test_planted\[\d\]", done.stdout, re.M)
    assert len(workers) == 6, done.stdout[-3000:]
    assert len(set(workers)) == 1, f"one group ran in {sorted(set(workers))}:\n{done.stdout[-3000:]}"
