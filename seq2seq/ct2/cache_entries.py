"""What the export cache holds (`s2s cache list`), and removing it (`s2s cache clear`).

An entry is removed only while no one makes it: its lock is taken without waiting, and an entry whose
lock another process holds is left as it is and reported busy.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from seq2seq.ct2.cache_key import HASHES
from seq2seq.ct2.export_cache import EXPORTS, RECORD, discard
from seq2seq.locks import try_lock

DAY = 24 * 3600


@dataclass(frozen=True)
class CacheEntry:
    """One folder of the cache: an entry, or an unfinished one (being made, or left by a killed process)."""

    path: Path
    run_dir: str  # "" when its record is unreadable or it is unfinished
    checkpoint: str
    compute_type: str
    shortlist: bool
    size: int  # bytes, the sizes of its files summed
    created: float  # seconds since the epoch
    finished: bool

    @property
    def key(self) -> str:
        """The key of the entry (`cache_key.entry_key`), also for an unfinished one (.KEY.*.tmp)."""
        return self.path.name.lstrip(".").split(".")[0]


@dataclass(frozen=True)
class Cleared:
    """What `clear_cache` removed, and what it left because another process was using it."""

    removed: list[CacheEntry]
    busy: list[CacheEntry]


def cache_entries(root: Path) -> list[CacheEntry]:
    """Every entry and unfinished entry under `root`, oldest first."""
    exports = root / EXPORTS
    if not exports.is_dir():
        return []
    found = []
    for path in exports.iterdir():
        with contextlib.suppress(FileNotFoundError):  # renamed or removed meanwhile by another s2s
            if path.is_dir():
                found.append(describe_entry(path))
    return sorted(found, key=lambda e: (e.created, e.path.name))


def describe_entry(path: Path) -> CacheEntry:
    """What the folder `path` of the cache holds, from its record (cache.json) where it can be read."""
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    finished = not path.name.startswith(".")
    try:
        record = json.loads((path / RECORD).read_text(encoding="utf-8")) if finished else {}
        shortlist = bool(record["decisions"].get("shortlist"))
        run, checkpoint, compute = (
            str(record["run_dir"]),
            str(record["checkpoint"]),
            str(record["compute_type"]),
        )
        created = float(record["created"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        run, checkpoint, compute, shortlist, created = "", "", "", False, path.stat().st_mtime
    return CacheEntry(path, run, checkpoint, compute, shortlist, size, created, finished)


def clear_cache(root: Path, run_dir: Path | None = None, older_than_days: float | None = None) -> Cleared:
    """Remove the entries of `run_dir` (None: of every run) made more than `older_than_days` ago (None:
    whenever). Unfinished entries go too, when no run is named, unless another process is making them;
    without either filter, so do the remembered checkpoint sums."""
    wanted = None if run_dir is None else str(Path(run_dir).resolve())
    before = None if older_than_days is None else time.time() - older_than_days * DAY
    removed: list[CacheEntry] = []
    busy: list[CacheEntry] = []
    for entry in cache_entries(root):
        of_run = wanted is None or entry.run_dir == wanted
        if of_run and (before is None or entry.created <= before):
            (removed if remove(entry.path, entry.key) else busy).append(entry)
    if run_dir is None and older_than_days is None:
        shutil.rmtree(root / HASHES, ignore_errors=True)
        for lock in (root / EXPORTS).glob("*.lock"):  # of entries that were never made
            if not lock.with_suffix("").exists():
                remove(lock.with_suffix(""), lock.stem)
    return Cleared(removed, busy)


def remove(path: Path, key: str) -> bool:
    """Remove the folder `path` of entry `key` (finished or not) and the entry's lock file, unless another
    process holds that lock; whether it did."""
    lock = path.parent / f"{key}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if not try_lock(fd):
            return False
        discard(path)
        lock.unlink(missing_ok=True)
    finally:
        os.close(fd)
    return True


def entries_table(root: Path, entries: list[CacheEntry]) -> str:
    """`s2s cache list`: the root and its total size, then one line per entry."""
    total = sum(e.size for e in entries)
    lines = [f"{root}: {len(entries)} export{'s' * (len(entries) != 1)}, {human_size(total)}"]
    if entries:
        lines.append("created           size       compute  shortlist  checkpoint  run")
    for e in entries:
        made = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created))
        if not e.finished or not e.run_dir:
            state = "being made, or left unfinished" if not e.finished else "unreadable record"
            lines.append(f"{made}  {human_size(e.size):<9}  ({state}: {e.path})")
            continue
        checkpoint = Path(e.checkpoint)
        shown = checkpoint.name if checkpoint.parent == Path(e.run_dir) / "checkpoints" else str(checkpoint)
        short = "yes" if e.shortlist else "no"
        lines.append(
            f"{made}  {human_size(e.size):<9}  {e.compute_type:<7}  {short:<9}  {shown:<10}  {e.run_dir}"
        )
    return "\n".join(lines)


def human_size(size: int) -> str:
    """1536 -> '1.5 KiB'."""
    amount, unit = float(size), "bytes"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if amount < 1024:
            break
        amount, unit = amount / 1024, bigger
    return f"{size} bytes" if unit == "bytes" else f"{amount:.1f} {unit}"
