"""One trainer at a time: `s2s train` holds its run directory with an OS lock on the run's marker.

The marker (`.s2s-run`) says the directory is s2s's own, and holds the pid of the process that holds
the lock while it is held, so that a second `s2s train` of the run is refused naming the first.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from seq2seq.errors import RunDirError
from seq2seq.locks import lock_or_refuse, try_lock
from seq2seq.run.layout import RunDir


@contextlib.contextmanager
def locked(run: RunDir) -> Iterator[None]:
    """Hold the run directory for this process (an OS lock, released on any exit, even kill -9).

    Creates the directory and its marker, and removes them again when nothing else was made there;
    refuses a non-empty directory that s2s did not make, and a directory another `s2s train` holds
    (naming its pid). The marker holds this process's pid while the lock is held and its earlier
    content after, so a refused command leaves it as it was.
    """
    check_own(run)
    made_dir, made_marker = not run.path.exists(), not run.marker_file.exists()
    try:
        run.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(run.marker_file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise RunDirError(f"cannot train into {run.path}: {e.strerror} ({e.filename})") from None
    try:
        lock_or_refuse(fd, lambda: _in_use(run, fd))
        before = os.pread(fd, 4096, 0)
        _rewrite(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            _rewrite(fd, before)
            if made_marker and [p.name for p in run.path.iterdir()] == [run.marker_file.name]:
                run.marker_file.unlink()  # the lock guarded nothing: leave nothing
                if made_dir:
                    run.path.rmdir()
    finally:
        os.close(fd)


def check_own(run: RunDir) -> None:
    """Refuse a non-empty directory that s2s did not make (it has no marker)."""
    if run.path.is_dir() and any(run.path.iterdir()) and not run.marker_file.is_file():
        raise RunDirError(f"{run.path} is not empty and is not an s2s run directory; choose another run_dir")


def check_free(run: RunDir) -> None:
    """What `locked` would refuse, found without holding the lock or writing anything: a directory
    s2s did not make, or one another `s2s train` holds."""
    check_own(run)
    try:
        fd = os.open(run.marker_file, os.O_RDONLY)
    except OSError:  # none yet; or unreadable, which `locked` reports
        return
    try:
        if not try_lock(fd):
            raise _in_use(run, fd)
    finally:
        os.close(fd)  # releases the lock, if it was taken


def _in_use(run: RunDir, fd: int) -> RunDirError:
    """The refusal when another process holds the lock: the marker names its pid."""
    holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
    return RunDirError(
        f"{run.path} is in use by another s2s train (pid {holder}); wait for it to finish, or stop it first"
    )


def _rewrite(fd: int, content: bytes) -> None:
    """Replace a file's content in place (the marker: a new inode would not be the locked one)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, content, 0)
