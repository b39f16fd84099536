"""Every file s2s writes: never onto one of the command's inputs, and always whole or not at all.

- An output path that names an input (the same file, even through a link or another spelling), or
  lies inside an input directory (an export, a run's tokenizer or checkpoints), is refused with a
  `Seq2SeqError` before anything is opened for writing (`check_outputs`); so is an input that lies
  in a folder the command writes into (a run's tokenizer/ or prepared corpus, a work directory).
- Content goes to a hidden temporary file in the output's directory, is flushed to disk, and only
  then renamed over the output (`atomic_output`): an error, Ctrl-C, SIGTERM or a full disk leaves
  the old file as it was. A kill -9 can leave a hidden `.NAME.*.tmp` file behind, never a half file.
- Errors from the disk name the real output path, never the temporary file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from seq2seq.errors import Seq2SeqError


class OutputError(Seq2SeqError):
    """An output cannot be written: it would replace an input, or the disk refused it."""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (same inode when both exist, else the same resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def lies_in(path: Path, directory: Path) -> bool:
    """Whether `path` is `directory` or a path under it, however either is spelled (links, `..`),
    and whether it exists or not: a hard link to a file under it counts too."""
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(directory))
    if real == root or root in real.parents:
        return True
    if not path.is_file():
        return False
    return any(same_file(path, inside) for inside in directory.rglob("*") if inside.is_file())


def check_outputs(
    outputs: Mapping[str, Path | None],
    inputs: Mapping[str, Path | None],
    folders: Mapping[str, Path | None] | None = None,
) -> None:
    """Refuse an output that is one of the inputs or lies inside an input directory, or two outputs
    that are one file.

    An input that is a directory (an export, a run's tokenizer/) is read as a whole, so nothing may be
    written into it, not even a new file. `folders` are outputs that are directories the command
    writes into or replaces (a run's tokenizer/, a work directory): besides, no input may lie in one.
    Keys are how the user named each file (`--out`, `--ref`, `the run's config.yaml`), so the message
    says which option to change.
    """
    named_folders = [(label, path) for label, path in (folders or {}).items() if path is not None]
    named_inputs = [(label, path) for label, path in inputs.items() if path is not None]
    for label, folder in named_folders:
        for other_label, other in named_inputs:
            if lies_in(other, folder):
                raise OutputError(
                    f"{other_label} {other} lies in {label} {folder}, which s2s writes into; choose "
                    f"another {label} or move it out"
                )
    # a device or pipe (/dev/stdout) is never replaced, so writing to it cannot destroy an input
    named_outputs = [
        (label, path) for label, path in outputs.items() if path is not None and not _is_special(path)
    ]
    for i, (label, path) in enumerate([*named_outputs, *named_folders]):
        for other_label, other in named_inputs:
            if not other.is_file() and lies_in(path, other):  # a folder, or one still to be made
                raise OutputError(
                    f"{label} {path} lies in {other_label} {other}, which s2s reads and never writes "
                    "into; choose an output path outside it"
                )
            if same_file(path, other):
                raise OutputError(
                    f"{label} {path} is also {other_label}: s2s never writes over a file it reads; "
                    "choose another output path"
                )
        for other_label, other in named_outputs[i + 1 :]:
            if same_file(path, other):
                raise OutputError(f"{label} and {other_label} name the same file {path}; choose two paths")


def disk_error(path: Path, error: BaseException) -> OutputError:
    """A clear message for a failed write of `path`: the OS reason, and the free space when it is low.

    torch.save reports a full disk as a RuntimeError about stream positions; the free space says
    what happened.
    """
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    with contextlib.suppress(OSError):
        free = shutil.disk_usage(path.parent).free
        if free < 1 << 20 and not isinstance(error, OSError):
            reason = f"the disk is full ({free} bytes free); torch said: {reason}"
        elif free < 1 << 30:
            reason += f" ({free / 2**20:.0f} MiB free on that disk)"
    return OutputError(f"cannot write {path}: {reason}")


@contextlib.contextmanager
def atomic_output(path: Path, binary: bool = False) -> Iterator[IO[Any]]:
    """A file object whose content replaces `path` only when the `with` block completes.

    A symlink's target is replaced, not the link; the new file keeps the permissions of the file it
    replaces (or gets the umask's defaults). A device or a pipe (`/dev/stdout`, `/dev/null`, a FIFO)
    has nothing to replace and is written to directly.
    """
    path = Path(path)
    if _is_special(path):
        with _disk_errors(path), open(path, "wb" if binary else "w", encoding=_encoding(binary)) as f:
            yield f
        return
    path = Path(os.path.realpath(path))
    mode = output_mode(path)
    with _disk_errors(path):
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with _disk_errors(path, tmp_name):
            os.fchmod(fd, mode)
            with open(fd, "wb" if binary else "w", encoding=_encoding(binary)) as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def _disk_errors(path: Path, tmp_name: str | None = None) -> Iterator[None]:
    """OS errors of writing `path` (or its temporary file) become an `OutputError` naming `path`."""
    try:
        yield
    except OSError as e:
        if e.filename not in (None, tmp_name, str(path)):
            raise  # an input failed, not this output
        raise disk_error(path, e) from None


def _is_special(path: Path) -> bool:
    """A device, pipe or socket: written to, never replaced (a directory is no such thing)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _encoding(binary: bool) -> str | None:
    return None if binary else "utf-8"


def write_text(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8), atomically."""
    with atomic_output(path) as f:
        f.write(text)


def output_mode(path: Path) -> int:
    """The permissions a new version of `path` gets: those of the file it replaces, or the umask's."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def check_new_directory(out_dir: Path) -> None:
    """Refuse `out_dir` for a directory a command makes whole, unless it is new or empty."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise OutputError(f"{out_dir} already exists and is not empty; choose a new directory")


@contextlib.contextmanager
def atomic_directory(out_dir: Path) -> Iterator[Path]:
    """A scratch directory beside `out_dir` (which must be new or empty) that becomes `out_dir` only
    when the `with` block completes: an export is never half-written."""
    check_new_directory(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp", dir=out_dir.parent))
    except OSError as e:
        raise disk_error(out_dir, e) from None
    umask = os.umask(0)
    os.umask(umask)
    try:
        scratch.chmod(0o777 & ~umask)  # mkdtemp's 0700 would hide the export from other users
        yield scratch
        if out_dir.is_dir():
            out_dir.rmdir()  # empty, checked above
        os.replace(scratch, out_dir)
    except OSError as e:
        raise disk_error(out_dir, e) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
