"""A run directory has one trainer: `s2s train` holds an OS lock on it, and a held run is refused
with nothing changed; the lock dies with its process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from seq2seq.run.layout import RunDir
from seq2seq.run.lock import locked
from tests.conftest import ROOT
from tests.helpers import run_cli, tree_digest


@pytest.mark.parametrize("flags", [["--resume"], ["--overwrite"], [], ["--tokenizer-only"]])
def test_a_run_directory_held_by_a_trainer_is_refused(run_copy, flags):
    config, run = run_copy.config, run_copy.run
    before = tree_digest(run)
    with locked(RunDir(run)):
        result = run_cli("train", str(config), *flags)
        assert result.exit_code == 2, result.output
        assert f"in use by another s2s train (pid {os.getpid()})" in result.output
    after = {k: v for k, v in tree_digest(run).items() if k != ".s2s-run"}
    assert after == {k: v for k, v in before.items() if k != ".s2s-run"}


def test_the_lock_dies_with_its_process(run_copy):
    run = run_copy.run
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nfrom seq2seq.run.layout import RunDir\nfrom seq2seq.run.lock import locked\n"
            f"with locked(RunDir({str(run)!r})):\n"
            "    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert holder.stdout.readline() == b"held\n"
    with pytest.raises(Exception, match=f"pid {holder.pid}"), locked(RunDir(run)):
        pass
    holder.kill()  # kill -9: no cleanup code runs
    holder.wait()
    with locked(RunDir(run)):
        pass
