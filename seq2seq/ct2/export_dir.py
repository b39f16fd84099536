"""A CTranslate2 export directory as s2s reads it: its `s2s.json` record (where it came from, the decode
defaults, the shortlist if there is one, the sha256 of every other file), the files that record names,
the range of its int8 weights, its vocabulary's pieces; and CTranslate2 itself, where it is installed.

What `seq2seq.ct2.conversion` writes and `seq2seq.ct2.runtime` loads; read without torch, so that decoding
an export never imports it.
"""

from __future__ import annotations

import importlib.util
import json
import platform
import sys
from pathlib import Path
from typing import Any

from seq2seq.config import Config, config_from_dict
from seq2seq.ct2.shortlist import VMAP_FILE
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import ConfigError, Seq2SeqError
from seq2seq.files import file_sha256
from seq2seq.special import PAD

EXPORT_INFO = "s2s.json"
INFO_FIELDS: dict[str, type | tuple[type, ...]] = {
    "run_dir": str,
    "checkpoint": str,
    "quantize": (str, type(None)),
    "config": dict,
}
MAX_INFO_BYTES = 1 << 20  # one is about 3 KB
# int8 weights in [-63, 63] (7 bits), like PyTorch's and ONNX Runtime's reduce_range: a CPU without
# VNNI (AVX2 only, as AMD's Zen 3) adds pairs of u8 x s8 products in int16, which 255 * 127 * 2
# overflows. With MKL held to AVX2, a full-range export agreed with fp32 on 4 of 20 greedy lines.
REDUCED_INT8, FULL_INT8 = 63, 127
# what `write_export` writes: one more whenever the same weights would give other files
EXPORT_FORMAT = 1
AGAIN = "make the export again with `s2s export RUN_DIR --format ctranslate2 NEW_DIR`"


class ExportError(Seq2SeqError):
    """An export that cannot be made or used (missing package, not an export directory)."""


def ctranslate2_missing() -> str | None:
    """Why CTranslate2 cannot run here, in one line, or None: not installed (it publishes no wheel for
    this platform, or was left out), or installed but failing to import (a broken install: what
    failed, and that s2s's own decoder still works)."""
    if importlib.util.find_spec("ctranslate2") is None:
        machine = platform.machine().lower()
        if sys.platform == "darwin" or (
            sys.platform.startswith("linux") and machine in ("x86_64", "aarch64")
        ):
            return "CTranslate2 is not installed; install it with: pip install 's2s[ct2]'"
        return (
            f"CTranslate2 publishes no wheel for {sys.platform} on {machine} (only for Linux on x86_64 or "
            "aarch64, and macOS), so s2s did not install it: build it from source, or decode with s2s's own "
            "decoder (--engine s2s)"
        )
    return _import_failure()


def ctranslate2_broken() -> str | None:
    """What fails when an installed CTranslate2 is imported, in one line, or None (it imports, or it is
    not installed at all)."""
    return None if importlib.util.find_spec("ctranslate2") is None else _import_failure()


def _import_failure() -> str | None:
    """What fails when CTranslate2, which is installed, is imported; None when it imports."""
    try:
        import ctranslate2  # noqa: F401
    except Exception as e:  # a broken install fails in many ways (ImportError, OSError of its library)
        first = str(e).splitlines()[0] if str(e) else ""
        return (
            f"CTranslate2 is installed but cannot be imported ({type(e).__name__}: {first}); s2s's own "
            "decoder still works (--engine s2s), and reinstalling it (pip install --force-reinstall "
            "ctranslate2) mends the rest"
        )
    return None


def require_ctranslate2() -> Any:
    """The ctranslate2 module, or an `ExportError` saying why it cannot be had (`ctranslate2_missing`)."""
    missing = ctranslate2_missing()
    if missing is not None:
        raise ExportError(missing)
    import ctranslate2

    return ctranslate2


def read_export_info(export_dir: Path) -> tuple[dict[str, Any], Config]:
    """An export's `s2s.json` and the run config it holds, checked before use: a missing, damaged or
    foreign one is an `ExportError` naming the file and how to make the export again."""
    path = Path(export_dir) / EXPORT_INFO
    if not path.is_file():
        raise ExportError(
            f"{export_dir} is not an s2s CTranslate2 export (no {EXPORT_INFO}); make one with "
            "`s2s export RUN_DIR --format ctranslate2 OUT_DIR`"
        )
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_INFO_BYTES + 1)
        info = json.loads(raw) if len(raw) <= MAX_INFO_BYTES else None
    except (OSError, ValueError, RecursionError) as e:
        raise ExportError(f"{path} is unreadable ({e}): {AGAIN}") from None
    if not isinstance(info, dict):
        raise ExportError(f"{path} is not what `s2s export` writes (a JSON object): {AGAIN}")
    wrong = [key for key, kinds in INFO_FIELDS.items() if key not in info or not isinstance(info[key], kinds)]
    if wrong:
        fields = ", ".join(wrong)
        raise ExportError(f"{path} is not what `s2s export` writes ({fields}: missing or wrong): {AGAIN}")
    try:
        return info, config_from_dict(info["config"], saved=True)
    except ConfigError as e:
        raise ExportError(f"{path} holds a config this s2s cannot use ({e}): {AGAIN}") from None


def export_file_sums(export_dir: Path) -> dict[str, str]:
    """sha256 of each file of an export but its `s2s.json`, by its path there (`tokenizer/spm.model`)."""
    files = sorted(p for p in export_dir.rglob("*") if p.is_file() and p.name != EXPORT_INFO)
    return {p.relative_to(export_dir).as_posix(): file_sha256(p) for p in files}


def check_export_files(export_dir: Path, info: dict[str, Any]) -> None:
    """The files the export's `s2s.json` (`info`) names are there, as the export made them: a vmap.txt
    where it records a shortlist, and each file with its sha256 (an export made before s2s recorded
    them names none). An `ExportError` names every file missing or changed."""
    recorded = info.get("files", {})
    named = isinstance(recorded, dict) and all(
        isinstance(k, str) and isinstance(v, str) and ".." not in Path(k).parts for k, v in recorded.items()
    )
    if not named or not isinstance(info.get("shortlist"), dict | None):
        raise ExportError(f"{export_dir / EXPORT_INFO} is not what `s2s export` writes: {AGAIN}")
    wanted: dict[str, str | None] = dict(recorded)
    if info.get("shortlist") is not None:  # an older export's record names no files, but this one
        wanted.setdefault(VMAP_FILE, None)
    problems = []
    for name, sha in sorted(wanted.items()):
        path = export_dir / name
        if not path.is_file():
            problems.append(f"{path} is missing")
        elif sha is not None and file_sha256(path) != sha:
            problems.append(f"{path} changed since the export was made")
    if problems:
        raise ExportError(
            f"{export_dir} is not the export its {EXPORT_INFO} records ({'; '.join(problems)}): {AGAIN}"
        )


QUANTIZATIONS = ("int8", "int8_float32", "int16", "float16", "bfloat16")  # `s2s export --quantize`


def is_int8(quantize: str | None) -> bool:
    """Whether `quantize` (a CTranslate2 weight type, None: float32) stores int8 weights."""
    return (quantize or "").startswith("int8")


def full_range_int8(info: dict[str, Any], quantize: str | None) -> bool:
    """Whether CTranslate2 runs an export (`info`, its s2s.json) with 8-bit int8 weights: int8 at load
    (`quantize`) of a float export, or an int8 export made before 7-bit weights (no `int8_range`)."""
    stored = info.get("quantize")
    if not is_int8(quantize or stored):
        return False
    return not (is_int8(stored) and info.get("int8_range") == REDUCED_INT8)


def vocabulary(tokenizer: Tokenizer) -> list[str]:
    """The pieces in id order, as the export names them: `<blank>` is CTranslate2's name for padding."""
    pieces = [tokenizer.sp.id_to_piece(i) for i in range(tokenizer.vocab_size)]
    pieces[PAD] = "<blank>"
    return pieces
