"""Child processes for the CPU-heavy data stages (SentencePiece training, corpus encoding).

They are spawned: fresh interpreters that load only what the task needs, never a copy of a process
that uses torch and its threads. A child that dies (out of memory, killed, or a script that calls s2s
without a main guard, which Python's spawn runs again in each child) becomes a `Seq2SeqError` that
says so, not a traceback or a pool that waits forever.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from seq2seq.errors import Seq2SeqError


@contextlib.contextmanager
def spawned_pool(
    workers: int, what: str, initializer: Callable[..., object] | None = None, initargs: tuple = ()
) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` spawned processes doing `what` (for messages); on leaving, tasks not
    started are cancelled and the workers stop."""
    pool = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("spawn"), initializer=initializer, initargs=initargs
    )
    try:
        yield pool
    except BrokenProcessPool:
        raise Seq2SeqError(
            f"{what}: a child process stopped before it finished (out of memory, or killed). If you "
            'call s2s from a Python script, put the call under `if __name__ == "__main__":` (Python '
            "runs the script again in each child process it spawns)"
        ) from None
    finally:
        pool.shutdown(cancel_futures=True)
