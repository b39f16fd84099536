"""The cache of CTranslate2 exports that a run directory is decoded with: made on first use, once.

    <root>/ctranslate2/<key>/            an entry: an export (`s2s export`'s files) and cache.json, what
                                         it was made from and what was measured and decided
                                         (`ct2.export_choice`)
    <root>/ctranslate2/<key>.lock        held while the entry is made or removed
    <root>/ctranslate2/.<key>.*.tmp/     an entry being made or removed (one a killed process left
                                         behind goes with `s2s cache clear`)
    <root>/sha256/                       checkpoints' sums, by their files' identity (`ct2.cache_key`)

The root is $S2S_CACHE_DIR, else $XDG_CACHE_HOME/s2s, else ~/.cache/s2s (`cache_root`). Nothing is
ever written into the run directory, which may be training. An entry is made in a scratch folder
beside it and renamed into place, so it is whole or absent: of two first uses at once, the second to
rename discards its own and uses the first's (the lock only spares it the work). An entry whose files
are not what its s2s.json records is removed and made again.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seq2seq.cpu import cpu_has_int8_dot_products
from seq2seq.ct2.cache_key import (
    FLOAT32,
    HASH_TRIES,
    INT8,
    RULES,
    CheckpointChanging,
    checkpoint_sha256,
    entry_key,
    same_file,
)
from seq2seq.ct2.export_dir import (
    EXPORT_INFO,
    FULL_INT8,
    REDUCED_INT8,
    ExportError,
    check_export_files,
    read_export_info,
    require_ctranslate2,
)
from seq2seq.errors import Seq2SeqError
from seq2seq.files import OutputError
from seq2seq.locks import lock_or_wait
from seq2seq.run.layout import RunDir

log = logging.getLogger(__name__)

CACHE_ENV = "S2S_CACHE_DIR"
EXPORTS = "ctranslate2"  # the folder of the root that holds the entries
RECORD = "cache.json"  # in an entry, beside the export's own s2s.json


class CacheUnavailable(Seq2SeqError):
    """The cache cannot be written or read: decode with s2s's own decoder, saying why."""


@dataclass(frozen=True)
class CachedExport:
    """An entry of the cache: the export, and how to load it (`CT2Translator.load`)."""

    path: Path  # an export directory
    compute_type: str  # `Placement.quantize` to load it with: int8 or float32
    shortlist: bool  # whether it decodes with a vocabulary map
    decisions: dict[str, Any]  # what was measured on the run's val sample and decided (`ct2.export_choice`)

    @property
    def record(self) -> Path:
        """The entry's record of what was measured and decided."""
        return self.path / RECORD

    @property
    def not_used(self) -> str | None:
        """Why `--engine auto` leaves the export aside (it does not reproduce s2s's decoder), or None."""
        why = self.decisions.get("not_used")
        return why if isinstance(why, str) else None


def cache_root() -> Path:
    """$S2S_CACHE_DIR, else $XDG_CACHE_HOME/s2s, else ~/.cache/s2s."""
    if given := os.environ.get(CACHE_ENV):
        return Path(given).expanduser().absolute()
    xdg = Path(os.environ.get("XDG_CACHE_HOME", "")).expanduser()
    return (xdg if xdg.is_absolute() else Path.home() / ".cache") / "s2s"


def check_not_owned(root: Path) -> None:
    """A `CacheUnavailable` if the cache's root lies in a folder s2s owns: a run directory (its
    config.yaml beside checkpoints/) or a CTranslate2 export (its s2s.json), which a cache would fill
    with files they never held (and a run's checkpoints/ is read by averaging and resuming)."""
    resolved = root.resolve()
    for folder in (resolved, *resolved.parents):
        run = (folder / "config.yaml").is_file() and (folder / "checkpoints").is_dir()
        if run or (folder / EXPORT_INFO).is_file():
            kind = "the run directory" if run else "the CTranslate2 export"
            raise CacheUnavailable(
                f"the export cache {root} lies inside {kind} {folder}, which s2s writes no cache into; "
                f"point {CACHE_ENV} at a folder outside it"
            )


def cached_export(run_dir: Path, checkpoint: str = "best", root: Path | None = None) -> CachedExport:
    """The cache's export of the run's `checkpoint` (best, last, a name in checkpoints/ or a path),
    made and chosen on the run's val sample on first use (`root`: None = `cache_root()`).

    `CacheUnavailable` when the cache cannot be written or read; an `ExportError` without CTranslate2;
    the run's own errors (no such checkpoint, a model s2s does not export) as they are.
    """
    require_ctranslate2()
    run = RunDir(run_dir)
    cfg = run.load_config()
    checkpoint_file = run.checkpoint_path(checkpoint)
    root = cache_root() if root is None else Path(root)
    check_not_owned(root)
    exports = root / EXPORTS
    with writing(exports):
        exports.mkdir(parents=True, exist_ok=True)
    int8_range = FULL_INT8 if cpu_has_int8_dot_products() else REDUCED_INT8
    for _ in range(HASH_TRIES):
        try:
            sha, stamp = checkpoint_sha256(checkpoint_file, root)
        except CheckpointChanging:
            break
        parts = entry_key(run, cfg, sha, int8_range, RULES)
        entry = exports / parts["key"]
        found = open_entry(entry)
        if isinstance(found, CachedExport):
            return found
        with entry_lock(entry, run.path):
            found = open_entry(entry)  # made while this one waited, or damaged
            if isinstance(found, str) and entry.exists():
                log.warning("the cached export %s is damaged (%s): making it again", entry, found)
                discard(entry)
            made = (
                found if isinstance(found, CachedExport) else make_entry(checkpoint_file, stamp, entry, parts)
            )
        if made is not None:
            return made
    raise CacheUnavailable(
        f"{checkpoint_file} was replaced while it was read (a training is saving it): its CTranslate2 "
        "export is made on a later use"
    )


def open_entry(entry: Path) -> CachedExport | str:
    """The entry at `entry`, its files checked, or why it cannot be used (missing, damaged)."""
    if not entry.is_dir():
        return "missing"
    try:
        info, _ = read_export_info(entry)
        check_export_files(entry, info)
        record = json.loads((entry / RECORD).read_text(encoding="utf-8"))
        compute_type, decisions = record["compute_type"], record["decisions"]
    except ExportError as e:
        return str(e)
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"{entry / RECORD} unreadable: {e}"
    if compute_type not in (INT8, FLOAT32) or not isinstance(decisions, dict):
        return f"{entry / RECORD} is not what s2s writes"
    return CachedExport(entry, compute_type, info.get("shortlist") is not None, decisions)


def make_entry(checkpoint: Path, stamp: str, entry: Path, parts: dict[str, Any]) -> CachedExport | None:
    """Export, choose and rename the entry into place (`parts`: what it depends on, `cache_key`);
    None when the checkpoint was replaced meanwhile (`stamp`) or another process's entry is damaged."""
    from seq2seq.ct2.export_choice import choose_export  # the model, in torch: only where an entry is made

    with writing(entry.parent):
        scratch = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", suffix=".tmp", dir=entry.parent))
    try:
        try:
            chosen = choose_export(
                Path(parts["run_dir"]), str(checkpoint), scratch, parts["int8_range"] == FULL_INT8
            )
        except OutputError as e:
            raise CacheUnavailable(f"cannot write the CTranslate2 export cache: {e}") from None
        if not same_file(stamp, checkpoint):
            return None
        record = {
            "run_dir": parts["run_dir"],
            "checkpoint": str(checkpoint.resolve()),
            "created": time.time(),
            "compute_type": chosen.compute_type,
            "decisions": chosen.decisions,
            "key": parts,
        }
        with writing(entry.parent):
            (chosen.directory / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            won = publish(chosen.directory, entry)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    found = open_entry(entry)
    if not isinstance(found, CachedExport):
        return None
    if won:
        log.info(
            "exported %s for CTranslate2 %s; cached in %s", checkpoint, describe(chosen.decisions), entry
        )
    else:
        log.info("another s2s made the same CTranslate2 export first: using %s", entry)
    return found


def publish(made: Path, entry: Path) -> bool:
    """Rename the folder `made` to `entry`; False when another process's entry is there already."""
    try:
        os.rename(made, entry)
    except OSError as e:
        if e.errno in (errno.EEXIST, errno.ENOTEMPTY) or entry.is_dir():
            return False
        raise
    return True


def describe(decisions: dict[str, Any]) -> str:
    """One line of what was decided: the compute type, the shortlist, their BLEU, the time it took."""
    bleu, shortlist = decisions.get("bleu", {}), decisions.get("shortlist")
    if not bleu:
        scores = f"{decisions['val']}"
    else:
        lines = decisions["val"]["lines"]
        scores = f"BLEU on {lines} val lines: {', '.join(f'{k} {v}' for k, v in bleu.items())}"
    kept = f"shortlist {shortlist['per_source']}/{shortlist['common']}" if shortlist else "no shortlist"
    return f"in {decisions['seconds']} s: {decisions['compute_type']}, {kept} ({scores})"


@contextlib.contextmanager
def entry_lock(entry: Path, run: Path) -> Iterator[None]:
    """Hold the lock of `entry` (waiting for another maker of it): where the file system has no locks,
    go on without (the rename keeps the entry whole; two processes only make it twice)."""
    with writing(entry.parent):
        fd = os.open(entry.parent / f"{entry.name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):
            lock_or_wait(
                fd, lambda: log.info("another s2s is making the CTranslate2 export of %s: waiting", run)
            )
        yield
    finally:
        os.close(fd)


def discard(entry: Path) -> None:
    """Remove an entry: renamed out of the way first, so no one finds it half removed."""
    trash = entry.parent / f".{entry.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.rename(entry, trash)
    shutil.rmtree(trash, ignore_errors=True)


@contextlib.contextmanager
def writing(folder: Path) -> Iterator[None]:
    """An OS error of writing the cache `folder` becomes `CacheUnavailable`, saying how to choose another."""
    try:
        yield
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        raise CacheUnavailable(
            f"cannot write the CTranslate2 export cache {folder}: {e.strerror or e}{where}; set {CACHE_ENV} "
            "to a writable directory"
        ) from None
