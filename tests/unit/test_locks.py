"""An exclusive file lock: a second holder is refused at once, or waits until the first lets go."""

from __future__ import annotations

import os

import pytest

from seq2seq.errors import Seq2SeqError
from seq2seq.locks import lock_or_refuse, lock_or_wait


def test_a_second_holder_is_refused_and_a_waiter_gets_the_lock_once_it_is_released(tmp_path):
    path = tmp_path / "marker"
    first = os.open(path, os.O_RDWR | os.O_CREAT)
    second = os.open(path, os.O_RDWR)
    try:
        lock_or_refuse(first, lambda: Seq2SeqError("never asked"))
        with pytest.raises(Seq2SeqError, match="held by the first"):
            lock_or_refuse(second, lambda: Seq2SeqError("held by the first"))
        waited = []

        def waiting() -> None:
            waited.append(True)
            os.close(first)  # the holder lets go: the wait ends

        lock_or_wait(second, waiting)
        assert waited == [True]
    finally:
        os.close(second)
        if not waited:
            os.close(first)
