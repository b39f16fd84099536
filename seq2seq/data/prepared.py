"""The prepared corpus: training pairs tokenized once into flat arrays that every rank memory-maps.

A prepared directory holds:

    .s2s-prepared       marker (the directory is s2s's) and lock
    manifest.json       what the arrays were made from, their sizes and checksums, corpus statistics
    train.src.ids       source ids without bos/eos: uint16 (vocabulary <= 65536) or uint32
    train.src.offsets   int64, N + 1 entries: pair i's source is ids[offsets[i]:offsets[i + 1]]
    train.tgt.ids, train.tgt.offsets
    train.costs         int32, N: each pair's padded length in a batch (what bucketing sorts by)

It is made by worker processes that stream the text in chunks (`seq2seq.data.encode`) and is reused
while the text files, the tokenizer and the length filter stay the same. The manifest is removed
first and written last, so an interrupted prepare leaves either no manifest or one that describes
complete arrays; their sizes and checksums are checked before use.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import mmap
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seq2seq.config import Config
from seq2seq.data.encode import EncodedCorpus, encode_corpus
from seq2seq.data.parallel import Batch, ParallelData, TokenArrays
from seq2seq.data.tokenizer import tokenizer_files
from seq2seq.errors import DataError
from seq2seq.files import file_sha256, write_text

log = logging.getLogger(__name__)

FORMAT = 2  # raise when the layout changes: older prepared data is then made again
MARKER = ".s2s-prepared"
MANIFEST = "manifest.json"
ARRAYS = ("src.ids", "src.offsets", "tgt.ids", "tgt.offsets", "costs")


def prepared_dir(cfg: Config) -> Path:
    """Where this config's prepared corpus lives: `data.prepared_dir`, or RUN_DIR/prepared."""
    return Path(cfg.data.prepared_dir) if cfg.data.prepared_dir else Path(cfg.run_dir) / "prepared"


def made_from(cfg: Config, data_sums: dict[str, str], tokenizer_sums: dict[str, str]) -> dict[str, Any]:
    """What a prepared corpus depends on: the training text, the tokenizer, the filter and the format.

    Paths are not part of it: the same text moved elsewhere is the same corpus.
    """
    text = {key: sha for key, sha in data_sums.items() if key.startswith("train_")}
    max_len, max_len_ratio = length_filter(cfg)
    return {
        "format": FORMAT,
        "text": text,
        "tokenizer": tokenizer_sums,
        "filter": {"max_len": max_len, "max_len_ratio": max_len_ratio},
        "task": cfg.model.task,
    }


def length_filter(cfg: Config) -> tuple[int, float]:
    """(data.max_len, data.max_len_ratio); a reader's targets are labels, so it has no length ratio."""
    return cfg.data.max_len, cfg.data.max_len_ratio if cfg.model.task == "translate" else 0.0


def ensure_prepared(
    cfg: Config,
    tokenizer_dir: Path,
    data_sums: dict[str, str],
    tokenizer_sums: dict[str, str],
    workers: int = 0,
) -> dict[str, Any]:
    """Reuse the prepared corpus if it matches the config, else (re)make it and say why. Rank 0 only.

    Returns the manifest. `workers` = 0 uses one encoding process per CPU core (none for a small
    corpus, which encodes faster than worker processes start).
    """
    directory = prepared_dir(cfg)
    wanted = made_from(cfg, data_sums, tokenizer_sums)
    with _locked(directory):
        reason = _stale_reason(directory, wanted)
        if reason is None:
            manifest = read_manifest(directory)
            log.info("reusing the prepared corpus in %s (%s pairs)", directory, f"{manifest['pairs']:,}")
        else:
            log.info("preparing the training corpus in %s: %s", directory, reason)
            models = tokenizer_files(tokenizer_dir, cfg.tokenizer.joint)
            pair = (models["joint"],) * 2 if cfg.tokenizer.joint else (models["src"], models["tgt"])
            if "labels" in models:
                pair = (pair[0], models["labels"])
            manifest = _prepare(cfg, directory, wanted, pair, workers or _default_workers(cfg))
    for side, name in (("src", "source"), ("tgt", "target")):
        if share := manifest["stats"][side]["unk_share"]:
            log.warning(
                "training %s: %.3f%% of the pieces are <unk>: characters outside the vocabulary; "
                "tokenizer.byte_fallback: true represents them as bytes",
                name,
                100 * share,
            )
    if manifest["pairs"] == 0:
        raise DataError(
            f"{', '.join(cfg.data.train_src)}: every training pair was filtered out; check data.max_len "
            "and data.max_len_ratio"
        )
    return manifest


@dataclass
class MappedCorpus(ParallelData):
    """A prepared corpus read through memory maps, which are let go of after every batch.

    A batch touches pages all over the files, and the kernel maps whole folios around each, so
    without this a process's RSS would grow towards the size of the corpus within an epoch. The
    pages stay in the page cache (one copy for every rank); only this process's mapping of them is
    dropped, and the next batch maps what it needs again.
    """

    maps: tuple[mmap.mmap, ...] = ()

    def batch(self, rows: Sequence[int] | np.ndarray) -> Batch:
        batch = super().batch(rows)
        for pages in self.maps:
            if hasattr(pages, "madvise"):  # not on Windows
                pages.madvise(mmap.MADV_DONTNEED)
        return batch


def _map(path: Path) -> mmap.mmap:
    with path.open("rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def load_prepared(directory: Path) -> MappedCorpus:
    """Memory-map a prepared corpus (the OS page cache holds one copy for every process).

    Checks what costs no reading: every array has the size the manifest gives, and the offsets span
    the ids. (`ensure_prepared` also compares checksums before a run starts.)
    """
    manifest = read_manifest(directory)
    arrays, maps = {}, []
    for name in ARRAYS:
        info = manifest["arrays"][name]
        path = directory / f"train.{name}"
        size = path.stat().st_size if path.is_file() else None
        if size != info["bytes"]:
            raise DataError(
                f"{path} is missing, truncated or changed ({size} bytes, the manifest says "
                f"{info['bytes']}): run `s2s prepare` again"
            )
        dtype = np.dtype(info["dtype"])
        if size:
            maps.append(_map(path))
            arrays[name] = np.frombuffer(maps[-1], dtype=dtype)
        else:  # an empty file cannot be mapped
            arrays[name] = np.zeros(0, dtype)
    data = MappedCorpus(
        TokenArrays(arrays["src.ids"], arrays["src.offsets"]),
        TokenArrays(arrays["tgt.ids"], arrays["tgt.offsets"]),
        arrays["costs"],
        manifest["made_from"].get("task", "translate"),
        tuple(maps),
    )
    if len(arrays["costs"]) != manifest["pairs"]:
        raise DataError(f"the prepared corpus in {directory} is inconsistent: run `s2s prepare` again")
    for side in (data.src, data.tgt):
        if len(side) != manifest["pairs"] or side.offsets[0] != 0 or side.offsets[-1] != len(side.ids):
            raise DataError(f"the prepared corpus in {directory} is inconsistent: run `s2s prepare` again")
    return data


def describe(manifest: dict[str, Any]) -> str:
    """The corpus statistics people check before spending GPU hours, as a small table."""
    c, stats = manifest["counts"], manifest["stats"]
    limits = manifest["made_from"]["filter"]
    ratio = limits["max_len_ratio"]
    rows = [
        f"pairs: {c['read']:,} read, {c['kept']:,} kept; dropped {c['empty']:,} with an empty side, "
        f"{c['too_long']:,} longer than {limits['max_len']} tokens, "
        + (f"{c['bad_ratio']:,} with length ratio > {ratio:g}" if ratio else "no length-ratio filter"),
        f"{'':<18}{'source':>12}{'target':>12}",
    ]
    fields = [
        ("tokens", lambda s: f"{s['tokens']:,}"),
        ("tokens per pair", lambda s: f"{s['mean']:.1f}"),
        ("length p50", lambda s: str(s["p50"])),
        ("length p90", lambda s: str(s["p90"])),
        ("length p99", lambda s: str(s["p99"])),
        ("length max", lambda s: str(s["max"])),
        ("<unk> pieces", lambda s: f"{100 * s['unk_share']:.3f}%"),
    ]
    for label, show in fields:
        rows.append(f"{label:<18}{show(stats['src']):>12}{show(stats['tgt']):>12}")
    return "\n".join(rows)


# ---- making it ----------------------------------------------------------------------------------


def _prepare(
    cfg: Config, directory: Path, wanted: dict[str, Any], models: tuple[Path, Path], workers: int
) -> dict[str, Any]:
    """Encode into a temporary directory, then swap the arrays in and write the manifest last."""
    for stale in directory.glob(".tmp-*"):  # left by a prepare that was killed (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=directory))
    try:
        corpus = encode_corpus(
            list(zip(cfg.data.train_src, cfg.data.train_tgt)),
            models,
            length_filter(cfg),
            scratch,
            workers,
        )
        manifest = _manifest(cfg, wanted, corpus)
        (directory / MANIFEST).unlink(missing_ok=True)
        for name in ARRAYS:
            os.replace(scratch / f"train.{name}", directory / f"train.{name}")
        write_text(directory / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    log.info("prepared %s pairs in %s", f"{manifest['pairs']:,}", directory)
    return manifest


def _manifest(cfg: Config, wanted: dict[str, Any], corpus: EncodedCorpus) -> dict[str, Any]:
    return {
        "made_from": wanted,
        "sources": {"train_src": list(cfg.data.train_src), "train_tgt": list(cfg.data.train_tgt)},
        "pairs": corpus.counts["kept"],
        "arrays": corpus.arrays,
        "counts": corpus.counts,
        "stats": corpus.stats,
    }


# ---- checking it --------------------------------------------------------------------------------


def _stale_reason(directory: Path, wanted: dict[str, Any]) -> str | None:
    """Why the prepared corpus in `directory` cannot be used as it is, or None when it can."""
    if not (directory / MANIFEST).is_file():
        return "no prepared corpus there yet"
    try:
        manifest = read_manifest(directory)
        have = manifest["made_from"]
        arrays = manifest["arrays"]
    except (DataError, KeyError, TypeError):
        return f"{MANIFEST} is unreadable"
    if have.get("format") != wanted["format"]:
        return f"it was made by another version of s2s (format {have.get('format')}, now {FORMAT})"
    changed = [
        f"{key} changed"
        for key in sorted(set(have["text"]) | set(wanted["text"]))
        if have["text"].get(key) != wanted["text"].get(key)
    ]
    if have.get("tokenizer") != wanted["tokenizer"]:
        changed.append("the tokenizer changed")
    if have.get("task", "translate") != wanted["task"]:
        changed.append(f"model.task changed: {have.get('task', 'translate')} -> {wanted['task']}")
    for key, value in wanted["filter"].items():
        if have["filter"].get(key) != value:
            changed.append(f"data.{key} changed: {have['filter'].get(key)} -> {value}")
    if changed:
        return ", ".join(changed)
    for name in ARRAYS:
        path = directory / f"train.{name}"
        if not path.is_file():
            return f"{path.name} is missing"
        size, expected = path.stat().st_size, arrays[name]["bytes"]
        if size != expected:
            return f"{path.name} is truncated or changed ({size} bytes, the manifest says {expected})"
        if file_sha256(path) != arrays[name]["sha256"]:
            return f"{path.name} is corrupt (its checksum differs from the manifest's)"
    return None


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"no prepared corpus in {directory}: run `s2s prepare CONFIG`") from None
    except (OSError, ValueError) as e:
        raise DataError(f"{path} is unreadable ({e}): run `s2s prepare CONFIG` again") from None


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold the prepared directory (one prepare at a time; runs sharing it wait for each other).

    Refuses a non-empty directory that s2s did not make: preparing writes files there.
    """
    marker = directory / MARKER
    if directory.is_dir() and any(directory.iterdir()) and not marker.is_file():
        raise DataError(
            f"data.prepared_dir {directory} is not empty and was not made by s2s; choose another directory"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(marker, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise DataError(f"cannot write the prepared corpus to {directory}: {e.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another s2s process preparing %s", directory)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


SMALL_CORPUS_BYTES = 16 << 20  # Multi30k is 4.5 MB: a few seconds in this process


def _default_workers(cfg: Config) -> int:
    text_bytes = sum(Path(p).stat().st_size for p in (*cfg.data.train_src, *cfg.data.train_tgt))
    if text_bytes < SMALL_CORPUS_BYTES:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
