"""Unit tests are quick and in-process: they run no command as a process (no `s2s`, torchrun, server
or script) and train no run of their own. They may read the session's shared runs (`trained_run`),
whatever training those took, and the data stages may use their own spawned workers (a tokenizer is
trained in one), which are part of the module under test. A test that needs a process or a training
of its own belongs in tests/integration or tests/system."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from seq2seq.training.trainer import Trainer
from tests.conftest import SHARED_TRAINING


def refused(do: Callable[..., Any], what: str) -> Callable[..., Any]:
    """`do`, refused with a message naming `what` unless a shared run is training."""

    def guarded(*args: Any, **kwargs: Any) -> Any:
        if not SHARED_TRAINING[0]:
            raise AssertionError(f"a unit test {what}: move it to tests/integration or tests/system")
        return do(*args, **kwargs)

    return guarded


@pytest.fixture(autouse=True)
def in_process_and_untrained(monkeypatch: pytest.MonkeyPatch) -> None:
    execute = subprocess.Popen._execute_child  # type: ignore[attr-defined]
    monkeypatch.setattr(subprocess.Popen, "_execute_child", refused(execute, "runs no command as a process"))
    monkeypatch.setattr(Trainer, "fit", refused(Trainer.fit, "trains no run of its own (read a shared one)"))
