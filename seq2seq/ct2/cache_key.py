"""What names an entry of the export cache: everything that changes the export it holds.

An entry's key is a hash of the checkpoint's content (sha256), the run directory (an export records
where it came from), the run's config (the decode defaults an export carries) and tokenizer files,
s2s's export format (`EXPORT_FORMAT`), CTranslate2's version, the int8 weights' range (8 bits where
this CPU sums int8 products in int32, 7 elsewhere) and the rules that choose the export (`Choice`,
which `ct2.export_choice` applies).

A checkpoint's sha256 is remembered in the cache by the file's identity (its resolved path, inode,
size and modification time), so a later use does not read a large file again; s2s saves a checkpoint
as a new file renamed into place, so a checkpoint saved again is hashed again, and so is one only
touched (to the same sum).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seq2seq.config import Config, config_to_dict
from seq2seq.ct2.export_dir import EXPORT_FORMAT, require_ctranslate2
from seq2seq.ct2.shortlist import ShortlistSize
from seq2seq.data.tokenizer import tokenizer_checksums
from seq2seq.files import OutputError, file_sha256, write_text
from seq2seq.run.layout import RunDir

HASHES = "sha256"  # the folder of the cache that remembers checkpoints' sums
HASH_TRIES = 3  # a checkpoint replaced while it was read is read again, this many times at most

INT8, FLOAT32 = "int8", "float32"  # the compute types an entry is loaded with


@dataclass(frozen=True)
class Choice:
    """How the cache chooses an export: part of every entry's key, so a new rule makes new entries."""

    sample_lines: int = 200
    export_loss: float = 0.2  # BLEU a float32 export may score below s2s's decoder and still be used
    int8_loss: float = 0.2  # BLEU int8 may score below s2s's decoder on the sample
    shortlist: ShortlistSize = field(default_factory=lambda: ShortlistSize(20, 100))
    shortlist_loss: float = 0.1  # BLEU the shortlist may lose on top of what int8 may


RULES = Choice()  # the rules the cache chooses by (`ct2.export_choice`)


class CheckpointChanging(Exception):
    """The checkpoint was replaced while it was read (a training is saving it)."""


def file_stamp(path: Path) -> str:
    """The identity of the file at `path` now: replaced or written, it has another."""
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_dev}|{stat.st_ino}|{stat.st_size}|{stat.st_mtime_ns}"


def checkpoint_sha256(path: Path, root: Path) -> tuple[str, str]:
    """(sha256 of the checkpoint at `path`, the file's stamp when it was read), remembered in `root`."""
    for _ in range(HASH_TRIES):
        stamp = file_stamp(path)
        memo = root / HASHES / f"{hashlib.sha256(stamp.encode()).hexdigest()[:32]}.json"
        try:
            known = json.loads(memo.read_text(encoding="utf-8"))
            if known["stamp"] == stamp and isinstance(known["sha256"], str):
                return known["sha256"], stamp
        except (OSError, ValueError, KeyError, TypeError):
            pass  # not remembered, or a damaged memo: read the file
        sha = file_sha256(path)
        if file_stamp(path) != stamp:
            continue
        try:
            memo.parent.mkdir(exist_ok=True)
            write_text(memo, json.dumps({"stamp": stamp, "sha256": sha}) + "\n")
        except (OSError, OutputError):
            pass  # the memo only saves time
        return sha, stamp
    raise CheckpointChanging(str(path))


def entry_key(
    run: RunDir, cfg: Config, checkpoint_sha: str, int8_range: int, choice: Choice
) -> dict[str, Any]:
    """What an entry's export depends on, `key` among it (the hash of the rest): recorded in the entry."""
    parts: dict[str, Any] = {
        "checkpoint_sha256": checkpoint_sha,
        "run_dir": str(run.path.resolve()),
        "config": config_to_dict(cfg),
        "tokenizer": tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint),
        "export_format": EXPORT_FORMAT,
        "ctranslate2": require_ctranslate2().__version__,
        "int8_range": int8_range,
        "choice": dataclasses.asdict(choice),
    }
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]
    return {"key": key, **parts}


def same_file(stamp: str, path: Path) -> bool:
    """Whether `path` is still the file `stamp` was taken of."""
    try:
        return file_stamp(path) == stamp
    except OSError:
        return False
