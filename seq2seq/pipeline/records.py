"""What a pipeline keeps of each step it ran: `WORKSPACE/records/STEP.json`.

A record is written when every command of the step has succeeded, and removed when the step starts
again, so a step that was interrupted has none. It holds the step's commands (its settings), the
sha256 of what it read and of what it wrote (a folder's: of its files' sums, by name), how long it
took and the disk it used. Whether a training is done is its run directory's own record
(`seq2seq.run.finished`); a training step's record adds what else it started from (a teacher's
tokenizer, its choice on val), the time and the disk.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from seq2seq.errors import Seq2SeqError
from seq2seq.files import file_sha256, write_text

RECORDS = "records"  # the workspace's folder of records


class RecordError(Seq2SeqError):
    """A step record that cannot be read."""


@dataclass(frozen=True)
class Record:
    step: str
    commands: list[list[str]]  # each command's settings (`Command.settings`)
    reads: dict[str, str]  # path -> sha256
    writes: dict[str, str]
    seconds: float
    disk_bytes: int
    finished: str  # when (UTC, ISO 8601)


def record_file(workspace: Path, step: str) -> Path:
    return workspace / RECORDS / f"{step}.json"


def read_record(workspace: Path, step: str) -> Record | None:
    """The step's record, or None when it has none (it never finished)."""
    path = record_file(workspace, step)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return Record(**raw)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as e:
        raise RecordError(
            f"{path} cannot be read ({type(e).__name__}: {e}): run the step again with --redo {step}"
        ) from None


def write_record(workspace: Path, record: Record) -> None:
    path = record_file(workspace, record.step)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(asdict(record), indent=1) + "\n")


def new_record(
    step: str,
    commands: list[list[str]],
    reads: dict[str, str],
    writes: dict[str, str],
    seconds: float,
    disk: int,
) -> Record:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return Record(step, commands, reads, writes, round(seconds, 3), disk, now)


def checksums(paths: tuple[Path, ...]) -> dict[str, str]:
    """sha256 of each file or folder that exists, by its path as given."""
    return {str(p): checksum(p) for p in paths if p.exists()}


def checksum(path: Path) -> str:
    """A file's sha256, or a folder's: of the names and sums of the files under it, sorted."""
    if not path.is_dir():
        return file_sha256(path)
    digest = hashlib.sha256()
    for inside in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(f"{inside.relative_to(path).as_posix()}\0{file_sha256(inside)}\n".encode())
    return digest.hexdigest()


def disk_bytes(path: Path) -> int:
    """Bytes the files under `path` hold (a file's own size)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def changed_reads(record: Record, now: dict[str, str]) -> dict[str, str]:
    """Each file the step read whose content is not what it was when the step ran: {path: why}."""
    found = {
        path: f"{path}: {'changed' if path in now else 'gone'} since the step ran"
        for path, sha in record.reads.items()
        if now.get(path) != sha
    }
    return found | {path: f"{path}: not read when the step ran" for path in now.keys() - record.reads.keys()}


def changed_writes(record: Record, now: dict[str, str]) -> list[str]:
    """Each result of the step that was changed since it made it (one that is gone is made again)."""
    return [
        f"{path}: changed since the step made it"
        for path, sha in sorted(record.writes.items())
        if path in now and now[path] != sha
    ]
