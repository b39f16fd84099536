"""How tests run s2s: the CLI in-process (`run_cli`) or as a process (`run_process`), and file digests
to show that a command changed nothing."""

from __future__ import annotations

import collections
import hashlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import Result
from typer.testing import CliRunner

from seq2seq import files
from seq2seq.cli import app
from seq2seq.training.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]  # the repository
# Multi30k, where scripts/fetch_multi30k.sh puts it, or S2S_MULTI30K; tests that need it skip without it
MULTI30K_DIR = Path(os.environ.get("S2S_MULTI30K", ROOT / "data" / "multi30k"))


def run_cli(*args: str, input: str | bytes | None = None) -> Result:
    """`s2s ARGS` in this process, `input` as stdin; `.output` holds stdout and stderr together.

    What a command sets for its whole process is put back afterwards, so no test inherits it from
    another: torch's thread counts (`s2s train` sets `train.num_threads`) and the `seq2seq` logger
    (its level and handlers, whose file handler would keep the run's log open and whose console
    handler would write to this call's captured stderr)."""
    logger = logging.getLogger("seq2seq")
    threads, level, handlers = torch.get_num_threads(), logger.level, logger.handlers[:]
    try:
        return CliRunner().invoke(app, list(args), input=input)
    finally:
        for handler in logger.handlers:
            if handler not in handlers:
                handler.close()
        logger.handlers[:] = handlers
        logger.setLevel(level)
        torch.set_num_threads(threads)


def run_process(*args: str) -> subprocess.CompletedProcess[bytes]:
    """`python -m seq2seq ARGS` as a child process (one thread), its stdout and stderr captured as bytes:
    for what only a real process shows (exit codes from signals, tracebacks, closed streams)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "seq2seq", *args], capture_output=True, cwd=ROOT, env=env)


def cli_translate(run: Path, lines: list[str], *args: str) -> list[str]:
    """What `s2s translate RUN --device cpu ARGS` prints for `lines`, one string per line."""
    result = run_cli("translate", str(run), "--device", "cpu", *args, input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    return result.stdout.split("\n")[: len(lines)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_digest(directory: Path) -> dict[str, str]:
    """sha256 of every file under `directory`, by relative path."""
    return {str(p.relative_to(directory)): digest(p) for p in sorted(directory.rglob("*")) if p.is_file()}


@contextmanager
def endless_fifo(directory: Path, fill: bytes) -> Iterator[tuple[Path, list[int]]]:
    """A named pipe in `directory` that yields `fill` without end (up to 64 MB), and `written`, whose
    one item counts the bytes a reader took before it stopped: what `/dev/zero` is to a reader."""
    path = directory / "endless"
    os.mkfifo(path)
    written = [0]

    def write() -> None:
        with open(path, "wb", buffering=0) as f:
            try:
                while written[0] < 64 << 20:
                    written[0] += f.write(fill * (1 << 16))
            except BrokenPipeError:  # the reader stopped
                pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        yield path, written
    finally:
        thread.join(timeout=10)  # a reader that closed the pipe ends the writer at its next write
        if thread.is_alive():  # one that never opened it: open it, so that the writer ends
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
            thread.join()


def stopped_before(step: int, killed: bool = False) -> Callable[..., Any]:
    """`Trainer.train_step`, stopping the training before step `step`: as Ctrl-C does (that step is
    the last, and saved), or, `killed`, as SIGKILL does (nothing is saved after the last checkpoint).
    For `monkeypatch.setattr(Trainer, "train_step", stopped_before(...))`."""
    train_step = Trainer.train_step

    def step_or_stop(self: Trainer, *args: Any, **kwargs: Any) -> Any:
        if self.progress.step + 1 == step:
            if killed:
                raise KeyboardInterrupt  # out of every `finally`, as no signal handler would
            self.stop.requested = True  # what Ctrl-C's handler sets
        return train_step(self, *args, **kwargs)

    return step_or_stop


def count_checksums(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """How many times each file (by name) is hashed by the run's checks and the tokenizer from now on."""
    hashed: collections.Counter[str] = collections.Counter()

    def counting(path: Path) -> str:
        hashed[Path(path).name] += 1
        return files.file_sha256(path)

    for module in ("seq2seq.run.checks", "seq2seq.data.tokenizer"):
        monkeypatch.setattr(f"{module}.file_sha256", counting)
    return hashed
