"""Exclusive locks on open files, held by one process at a time (the OS's `flock`).

The lock belongs to the open file: it goes when the file is closed or the process ends, even by
kill -9, so a lock never outlives its holder. Used by `s2s train` (one trainer per run directory),
the prepared corpus (one prepare at a time), a resumable `s2s translate` (one writer per output) and
the cache of CTranslate2 exports (one maker, or remover, of an entry at a time).
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable

from seq2seq.errors import Seq2SeqError


def lock_or_refuse(fd: int, refusal: Callable[[], Seq2SeqError]) -> None:
    """Lock the open file `fd` now, or raise `refusal()` when another process holds it.

    `refusal` is called only then, so it may read the file to name the holder.
    """
    if not try_lock(fd):
        raise refusal()


def lock_or_wait(fd: int, waiting: Callable[[], None]) -> None:
    """Lock the open file `fd`; when another process holds it, call `waiting` (to say so) and wait."""
    if not try_lock(fd):
        waiting()
        fcntl.flock(fd, fcntl.LOCK_EX)


def try_lock(fd: int) -> bool:
    """Lock the open file `fd` if no other process holds it; whether it did."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
