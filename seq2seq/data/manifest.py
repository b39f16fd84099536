"""A prepared corpus's manifest: what its arrays were made from, and whether they still fit the config.

Each training corpus has its own (`seq2seq.data.prepared`). `manifest.json` holds the inputs
(`made_from`: the corpus's text checksums, the tokenizer's, the length filter, the cleaning rules,
the source prefix, the task and the format), the arrays' sizes and checksums, the counts of what each
rule dropped, and the corpus statistics.
A prepared corpus is reused only while `stale_reason` finds nothing; otherwise it is made again
(`seq2seq.data.prepared`), and the reason is logged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seq2seq.config import Config
from seq2seq.config.data import CorpusConfig, language_token
from seq2seq.data.cleaning import REASON_NAMES, REASONS
from seq2seq.data.control import source_prefix
from seq2seq.data.encode import EncodedCorpus
from seq2seq.data.targets import TARGETS
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import DataError
from seq2seq.files import file_sha256

FORMAT = 3  # raise when the layout changes: older prepared data is then made again
MANIFEST = "manifest.json"
DROPPED = "dropped.json"  # beside it: a few of the pairs each rule dropped (`dropped_report`)
ARRAYS = ("src.ids", "src.offsets", "tgt.ids", "tgt.offsets", "costs")


def made_from(
    cfg: Config,
    corpus: CorpusConfig,
    text_sums: dict[str, str],
    tokenizer_sums: dict[str, str],
    prefix: tuple[int, ...],
) -> dict[str, Any]:
    """What one prepared corpus depends on: its text (checksums by role: src, tgt or tsv), the
    tokenizer, the length filter, its cleaning rules (with the languages its `langid` expects: the
    corpus's own), its source prefix (language token and tag ids) and the format.

    Paths and the weight are not part of it: the same text moved elsewhere is the same corpus, and
    a weight only changes how often training draws its pairs.
    """
    max_len, max_len_ratio = length_filter(cfg)
    clean = dataclasses.asdict(corpus.clean)
    languages = list(cfg.data.corpus_languages(corpus)) if corpus.clean.langid else []
    return {
        "format": FORMAT,
        "text": text_sums,
        "tokenizer": tokenizer_sums,
        "filter": {"max_len": max_len, "max_len_ratio": max_len_ratio},
        "clean": clean | {"languages": languages},
        "prefix": list(prefix),
        "task": str(cfg.model.task),
    }


def corpus_made_from(
    cfg: Config,
    corpus: CorpusConfig,
    keys: dict[str, str],
    data_sums: dict[str, str],
    tokenizer_sums: dict[str, str],
    tokenizer: Tokenizer,
) -> dict[str, Any]:
    """`made_from` of `corpus` (`keys`: its role -> data key): its text as `data_sums` sums it (by data
    key), the tokenizer of `tokenizer_sums`, its tag and target language as `tokenizer`'s ids."""
    if missing := [f"data.{key}" for key in keys.values() if key not in data_sums]:
        raise DataError(
            f"no sha256 of {', '.join(missing)} is recorded: corpus {corpus.name} cannot be checked"
        )
    language = language_token(corpus.tgt_lang) if corpus.tgt_lang else ""
    prefix = source_prefix(tokenizer, language, corpus.tag)
    return made_from(
        cfg, corpus, {role: data_sums[key] for role, key in keys.items()}, tokenizer_sums, prefix
    )


def check_made_from(directory: Path, wanted: dict[str, Any], arrays: bool = True) -> None:
    """Refuse the prepared corpus in `directory` unless it is made from `wanted` (`made_from`) and,
    with `arrays`, its arrays are whole (their sizes and sha256 as the manifest records them): for a
    reader after training, which cannot make it again itself (`s2s export --shortlist`)."""
    if reason := stale_reason(directory, wanted, arrays):
        raise DataError(
            f"the prepared corpus in {directory} is not the one the run trained on ({reason}): make it "
            "again with `s2s prepare CONFIG`, the run's config and data"
        )


def length_filter(cfg: Config) -> tuple[int, float]:
    """(data.max_len, data.max_len_ratio); a reader's targets are labels, so it has no length ratio."""
    return cfg.data.max_len, TARGETS[cfg.model.task].length_ratio(cfg.data.max_len_ratio)


def new_manifest(corpus: CorpusConfig, wanted: dict[str, Any], encoded: EncodedCorpus) -> dict[str, Any]:
    """The manifest of arrays just encoded from `corpus`."""
    return {
        "made_from": wanted,
        "name": corpus.name,
        "sources": corpus.files(),
        "pairs": encoded.counts["kept"],
        "arrays": encoded.arrays,
        "counts": encoded.counts,
        "stats": encoded.stats,
    }


NUMBER = (int, float)
LENGTHS = dict.fromkeys(("tokens", "p50", "p90", "p99", "max"), int) | {
    "mean": NUMBER,
    "unk_share": NUMBER,
    "histogram": [int],
}
# what `new_manifest` writes: {key: shape} an object with these keys, {str: shape} one of any keys,
# [shape] a list, a type (or types) a value; checked before any of it is used
SHAPE: dict[Any, Any] = {
    "made_from": {
        "format": int,
        "text": {str: str},
        "tokenizer": {str: str},
        "filter": {"max_len": int, "max_len_ratio": NUMBER},
        "clean": dict.fromkeys(("copies", "control_chars", "langid", "dedup"), bool)
        | {"min_alnum": NUMBER, "languages": [str]},
        "prefix": [int],
        "task": str,
    },
    "name": str,
    "sources": {str: str},
    "pairs": int,
    "arrays": {name: {"dtype": str, "bytes": int, "sha256": str} for name in ARRAYS},
    "counts": dict.fromkeys(("read", "kept", *REASONS), int),
    "stats": {"src": LENGTHS, "tgt": LENGTHS},
}
MAX_BYTES = 1 << 20  # a manifest is about 2 KB


def read_manifest(directory: Path, any_format: bool = False) -> dict[str, Any]:
    """The manifest in `directory`, its shape checked: one that is not JSON, or not what this version
    of s2s writes, is a `DataError` naming the file. With `any_format`, a manifest of another format
    (an older s2s's) is returned once its format is known, for `stale_reason` to say so."""
    path = directory / MANIFEST
    again = "run `s2s prepare CONFIG` again"
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
        manifest = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except FileNotFoundError:
        raise DataError(f"no prepared corpus in {directory}: run `s2s prepare CONFIG`") from None
    except (OSError, ValueError, RecursionError) as e:
        raise DataError(f"{path} is unreadable ({e}): {again}") from None
    if manifest is None:
        raise DataError(f"{path} is over {MAX_BYTES // 1024} KiB, not a manifest s2s wrote: {again}")
    problem = shape_problem(manifest, {"made_from": {"format": int}}, "manifest")
    if problem is None and manifest["made_from"]["format"] != FORMAT:
        if any_format:
            return manifest
        problem = f"made by another version of s2s: format {manifest['made_from']['format']}, now {FORMAT}"
    problem = problem or shape_problem(manifest, SHAPE, "manifest")
    if problem is not None:
        raise DataError(f"{path} is not a manifest this s2s can use ({problem}): {again}")
    return manifest


def shape_problem(value: Any, shape: Any, where: str) -> str | None:
    """What keeps `value` (plain JSON data) from having `shape` (see SHAPE), or None."""
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where} is not an object"
        if list(shape) == [str]:
            inner = [(item, shape[str], f"{where}.{key}") for key, item in value.items()]
        else:
            missing = next((key for key in shape if key not in value), None)
            if missing is not None:
                return f"{where}.{missing} is missing"
            inner = [(value[key], kind, f"{where}.{key}") for key, kind in shape.items()]
    elif isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} is not a list"
        inner = [(item, shape[0], f"{where}[{i}]") for i, item in enumerate(value)]
    elif shape is bool:
        return None if isinstance(value, bool) else f"{where} is not true or false"
    else:
        kinds = shape if isinstance(shape, tuple) else (shape,)
        if isinstance(value, bool) or not isinstance(value, kinds):  # JSON's true is no number
            return f"{where} is not {'a number' if float in kinds else TYPE_NAMES[shape]}"
        return None
    return next(filter(None, (shape_problem(*args) for args in inner)), None)


TYPE_NAMES = {str: "a string", int: "an integer"}


def stale_reason(directory: Path, wanted: dict[str, Any], arrays: bool = True) -> str | None:
    """Why the prepared corpus in `directory` cannot be used as it is, or None when it can (without
    `arrays`: its manifest's record of what it was made from, not its arrays' checksums)."""
    if not (directory / MANIFEST).is_file():
        return "no prepared corpus there yet"
    try:
        manifest = read_manifest(directory, any_format=True)
        have = manifest["made_from"]
        sums = manifest["arrays"]
    except (DataError, KeyError, TypeError):
        return f"{MANIFEST} is unreadable"
    if have.get("format") != wanted["format"]:
        return f"it was made by another version of s2s (format {have.get('format')}, now {FORMAT})"
    changed = [
        f"its {key} file changed"
        for key in sorted(set(have["text"]) | set(wanted["text"]))
        if have["text"].get(key) != wanted["text"].get(key)
    ]
    if have.get("tokenizer") != wanted["tokenizer"]:
        changed.append("the tokenizer changed")
    if have.get("clean") != wanted["clean"]:
        changed.append("the corpus's clean rules changed")
    if have.get("prefix") != wanted["prefix"]:
        changed.append("its tag changed")
    if have["task"] != wanted["task"]:
        changed.append(f"model.task changed: {have['task']} -> {wanted['task']}")
    for key, value in wanted["filter"].items():
        if have["filter"].get(key) != value:
            changed.append(f"data.{key} changed: {have['filter'].get(key)} -> {value}")
    if changed:
        return ", ".join(changed)
    if not arrays:
        return None
    return array_damage(directory, sums) or _dropped_damage(directory)


def array_damage(
    directory: Path, arrays: dict[str, dict[str, Any]], names: Sequence[str] = ARRAYS
) -> str | None:
    """What is wrong with the arrays `names` on disk against the manifest's sizes and checksums
    (`arrays`), if anything."""
    for name in names:
        path = directory / f"train.{name}"
        if not path.is_file():
            return f"{path.name} is missing"
        size, expected = path.stat().st_size, arrays[name]["bytes"]
        if size != expected:
            return f"{path.name} is truncated or changed ({size} bytes, the manifest says {expected})"
        if file_sha256(path) != arrays[name]["sha256"]:
            return f"{path.name} is corrupt (its checksum differs from the manifest's)"
    return None


def _dropped_damage(directory: Path) -> str | None:
    """Why the dropped pairs beside the manifest cannot be read, if they cannot: `s2s prepare` then
    makes the corpus again, as `dropped_pairs`'s error advises."""
    try:
        dropped_pairs(directory.parent, directory.name)
    except DataError:
        return f"{DROPPED} is missing or unreadable"
    return None


def dropped_summary(manifest: dict[str, Any]) -> str:
    """What each rule dropped, e.g. "12 with an empty side, 3 a duplicate pair", or "none dropped"."""
    c, limits = manifest["counts"], manifest["made_from"]["filter"]
    names = REASON_NAMES | {
        "too_long": f"longer than {limits['max_len']} tokens",
        "bad_ratio": f"length ratio > {limits['max_len_ratio']:g}",
    }
    parts = [f"{c[reason]:,} {names[reason]}" for reason in REASONS if c[reason]]
    return ", ".join(parts) or "none dropped"


def describe(manifests: dict[str, dict[str, Any]], weights: dict[str, float]) -> str:
    """The statistics people check before spending GPU hours: per corpus what was read, kept and
    dropped and why, how many pairs an epoch draws from it, and its token lengths."""
    rows = []
    for name, m in manifests.items():
        c = m["counts"]
        epoch = round(m["pairs"] * weights[name])
        rows.append(
            f"corpus {name}: {c['read']:,} pairs read, {c['kept']:,} kept, weight {weights[name]:g} "
            f"({epoch:,} per epoch); dropped: {dropped_summary(m)}"
        )
    rows.append(
        f"{'':<18}" + "".join(f"{f'{name} {side}':>16}" for name in manifests for side in ("src", "tgt"))
    )
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
        cells = "".join(
            f"{show(m['stats'][side]):>16}" for m in manifests.values() for side in ("src", "tgt")
        )
        rows.append(f"{label:<18}{cells}")
    return "\n".join(rows)


def dropped_report(top: Path, corpora: Sequence[CorpusConfig], count: int) -> str:
    """Up to `count` pairs each rule dropped from each corpus: `line N: source ||| target`."""
    rows = []
    for corpus in corpora:
        manifest, dropped = read_manifest(top / corpus.name), dropped_pairs(top, corpus.name)
        for reason in REASONS:
            if examples := dropped.get(reason, [])[:count]:
                total = manifest["counts"][reason]
                rows.append(f"corpus {corpus.name}: {total:,} dropped for {REASON_NAMES[reason]}, e.g.")
                rows += [f"  line {line}: {src} ||| {tgt}" for line, src, tgt in examples]
    return "\n".join(rows) or "no pair was dropped"


def dropped_pairs(top: Path, name: str) -> dict[str, list[list[Any]]]:
    """A few of the pairs each rule dropped from corpus `name`: reason -> [[line, source, target]]."""
    path = top / name / DROPPED
    try:
        dropped = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        dropped = None
    if not isinstance(dropped, dict):
        raise DataError(f"{path} is missing or unreadable: run `s2s prepare CONFIG` again")
    return dropped
