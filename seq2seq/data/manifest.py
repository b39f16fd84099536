"""The prepared corpus's manifest: what its arrays were made from, and whether they still fit the config.

`manifest.json` holds the inputs (`made_from`: the training text's checksums, the tokenizer's, the
length filter, the task and the format), the arrays' sizes and checksums, and the corpus statistics.
A prepared corpus is reused only while `stale_reason` finds nothing; otherwise it is made again
(`seq2seq.data.prepared`), and the reason is logged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seq2seq.config import Config
from seq2seq.data.encode import EncodedCorpus
from seq2seq.errors import DataError
from seq2seq.files import file_sha256

FORMAT = 2  # raise when the layout changes: older prepared data is then made again
MANIFEST = "manifest.json"
ARRAYS = ("src.ids", "src.offsets", "tgt.ids", "tgt.offsets", "costs")


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


def new_manifest(cfg: Config, wanted: dict[str, Any], corpus: EncodedCorpus) -> dict[str, Any]:
    """The manifest of arrays just encoded from `cfg`'s training files."""
    return {
        "made_from": wanted,
        "sources": {"train_src": list(cfg.data.train_src), "train_tgt": list(cfg.data.train_tgt)},
        "pairs": corpus.counts["kept"],
        "arrays": corpus.arrays,
        "counts": corpus.counts,
        "stats": corpus.stats,
    }


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"no prepared corpus in {directory}: run `s2s prepare CONFIG`") from None
    except (OSError, ValueError) as e:
        raise DataError(f"{path} is unreadable ({e}): run `s2s prepare CONFIG` again") from None


def stale_reason(directory: Path, wanted: dict[str, Any]) -> str | None:
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
    return _array_damage(directory, arrays)


def _array_damage(directory: Path, arrays: dict[str, dict[str, Any]]) -> str | None:
    """What is wrong with the arrays on disk against the manifest's sizes and checksums, if anything."""
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
