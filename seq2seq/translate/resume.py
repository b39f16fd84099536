"""Translating a corpus file into a file, resumable: a kill loses at most the chunk being decoded.

`s2s translate RUN -i FILE -o OUT` (both regular files) builds OUT in `OUT.partial` beside it. The
input is cut into chunks of `CHUNK_LINES` lines counted from its first line; each chunk is sorted by
length into batches inside the engine, and its translations are appended in input order. Once a
chunk is on disk (flushed and synced), `OUT.partial.json` records how many lines are done, how many
bytes of `OUT.partial` they fill, the sha256 of those input lines, and the settings of the command.

Run the same command again after a kill and it continues: the partial file is cut back to the
recorded bytes (a chunk written after the last record is decoded again), the done lines of the input
are read again and must hash as recorded (the input was not changed or replaced), and decoding goes
on from the next chunk. Since chunks are counted from line 1 whatever happened, a resumed run decodes
the very batches an uninterrupted one does, so its lines are the same (sampling with --seed too). At
the end `OUT.partial` is renamed over OUT and the record removed.

Other settings than the record's (another run, checkpoint, beam, tag...) are refused, naming what
differs: continue with the same command, or start over with --restart. While a command writes
`OUT.partial` it holds a lock on it, so a second one writing the same OUT is refused too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from seq2seq.data.compression import open_binary
from seq2seq.data.textio import BLOCK, LinesInStep, stream_line_chunks
from seq2seq.errors import DataError
from seq2seq.files import OutputError, atomic_output, disk_error, output_mode
from seq2seq.locks import lock_or_refuse
from seq2seq.translate.engine import LineTranslator
from seq2seq.translate.request import Request
from seq2seq.translate.streams import format_translation

log = logging.getLogger(__name__)

CHUNK_LINES = 4096  # lines decoded between two records: the most a kill can cost
FORMAT = 1  # of OUT.partial.json


def partial_paths(output: Path) -> tuple[Path, Path]:
    """Where OUT is built (`OUT.partial`) and where its progress is recorded (`OUT.partial.json`):
    beside the file OUT names (a symlink's target is what gets replaced, as `atomic_output` does)."""
    real = Path(os.path.realpath(output))
    return real.with_name(real.name + ".partial"), real.with_name(real.name + ".partial.json")


def resumable(input: Path | None, output: Path | None) -> bool:
    """Whether a command can resume: a regular input file (it can be read again) into a path that is
    a file to build (not stdout, a pipe or a device)."""
    if input is None or output is None or not input.is_file():
        return False
    return not output.exists() or output.is_file()


@dataclass(frozen=True)
class Progress:
    """What `OUT.partial.json` says: the lines done and what they are."""

    settings: dict[str, Any]
    lines: int  # input lines translated: a multiple of CHUNK_LINES, or all of them
    output_bytes: int  # the bytes of OUT.partial that hold their translations
    input_sha256: str  # of those input lines, each with its '\n'

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **dataclasses.asdict(self)}, indent=1) + "\n"


def translate_file(
    translator: LineTranslator,
    request: Request,
    input: Path,
    output: Path,
    settings: Mapping[str, Any],
    restart: bool,
    on_lines: Callable[[int], object],
    prefixes: LinesInStep | None = None,
) -> int:
    """Translate INPUT into OUTPUT chunk by chunk, continuing a partial run with the same `settings`
    (anything that changes a translation: run, weights, search, tag, format, the prefix file); returns
    the line it continued after (0 for a fresh start). `on_lines` gets each chunk's line count, and the
    lines skipped on resuming. With `prefixes`, each translation starts with its line of that file."""
    recorded: dict[str, Any] = json.loads(json.dumps(dict(settings)))  # as read back: lists, not tuples
    partial, record = partial_paths(output)
    mode = output_mode(Path(os.path.realpath(output)))
    with _locked(partial) as sink, _kept_once_recorded(partial, record):
        progress = _start(record, recorded, restart)
        if progress is None or os.fstat(sink.fileno()).st_size < progress.output_bytes:
            # begin again: asked to, nothing recorded, or the partial file is not the recorded one
            record.unlink(missing_ok=True)
            progress = Progress(recorded, 0, 0, hashlib.sha256().hexdigest())
        resumed = progress.lines
        if resumed:
            log.warning("continuing %s after line %d (from %s)", output, resumed, partial)
        sink.truncate(progress.output_bytes)
        sink.seek(progress.output_bytes)
        if prefixes is not None:
            prefixes.take(progress.lines)  # those of the lines already translated
        for first, chunk, sha in _chunks_left(input, progress, on_lines):
            forced = {} if prefixes is None else {"prefixes": prefixes.take(len(chunk))}
            results = translator.translate(chunk, request, first, **forced)
            text = "".join(format_translation(result, request.scores) for result in results)
            _append(sink, text.encode("utf-8"), output)
            progress = Progress(recorded, first + len(chunk) - 1, sink.tell(), sha)
            with atomic_output(record) as f:
                f.write(progress.to_json())
            on_lines(len(chunk))
        if prefixes is not None:
            prefixes.finish()  # before OUTPUT is replaced: a prefix file of other lines changes nothing
        os.chmod(partial, mode)  # the output's own permissions, once nothing more is written
        os.replace(partial, os.path.realpath(output))
        record.unlink(missing_ok=True)  # under the lock: a waiting command finds neither
    return resumed


def _chunks_left(
    input: Path, progress: Progress, on_lines: Callable[[int], object]
) -> Iterator[tuple[int, list[str], str]]:
    """The chunks of INPUT still to translate, as (first line number, lines, sha256 of the input up to
    their end). The chunks `progress` counts as done are read again, and must hash as it recorded."""
    digest = hashlib.sha256()
    done = 0
    with open_binary(input) as source:
        for chunk in _line_chunks(source, str(input)):
            for line in chunk:
                digest.update(line.encode("utf-8") + b"\n")
            done += len(chunk)
            if done > progress.lines:
                if done - len(chunk) < progress.lines:  # the recorded last chunk has grown since
                    raise changed(input, progress.lines)
                yield done - len(chunk) + 1, chunk, digest.hexdigest()
                continue
            if done == progress.lines and digest.hexdigest() != progress.input_sha256:
                raise changed(input, done)
            on_lines(len(chunk))
    if done < progress.lines:
        raise DataError(f"{input} has fewer lines than were translated before: add --restart to begin again")


def changed(input: Path, lines: int) -> DataError:
    """The input is not the one the record describes: its first `lines` lines differ, or go on where
    its end was."""
    return DataError(
        f"{input}: its first {lines:,} lines are not the ones translated before (the file changed): add "
        "--restart to begin again"
    )


def _line_chunks(source: BinaryIO, where: str) -> Iterator[list[str]]:
    """The input's lines in chunks of exactly CHUNK_LINES (the last one shorter), counted from line 1."""
    pending: list[str] = []
    for lines in stream_line_chunks(source, where, BLOCK):
        pending.extend(lines)
        while len(pending) >= CHUNK_LINES:
            yield pending[:CHUNK_LINES]
            del pending[:CHUNK_LINES]
    if pending:
        yield pending


# as `Translator.identity` records its dtype (str of a torch dtype; None for plain fp32); spelled out
# rather than read from `device.DTYPES`, whose import would load torch on CTranslate2's path
PRECISIONS = {"None": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16"}


def recorded_engine(output: Path) -> str | None:
    """The engine (s2s, ctranslate2) the interrupted command building OUTPUT decoded with, or None
    when nothing usable is recorded (`translate_file` then says why, or begins again). `--engine
    auto` continues with it: a file is never translated by two engines."""
    engine = _recorded(output).get("engine")
    return engine if isinstance(engine, str) else None


def recorded_precision(output: Path) -> str | None:
    """The precision (fp32, bf16, fp16) the interrupted command building OUTPUT ran at, or None when
    nothing usable is recorded.

    `--precision auto` is decided from the CPU's features, so a command continuing OUTPUT on another
    machine may choose otherwise: it runs at the recorded precision instead, so that its lines are the
    ones the uninterrupted command would have written."""
    settings = _recorded(output)
    if settings.get("quantize") is not None or not isinstance(dtype := settings.get("dtype"), str):
        return None
    return PRECISIONS.get(dtype)


def _recorded(output: Path) -> dict[str, Any]:
    """The settings the record of OUTPUT's interrupted command holds ({} when none is readable)."""
    try:
        settings = json.loads(partial_paths(output)[1].read_text(encoding="utf-8"))["settings"]
    except (OSError, ValueError, TypeError, KeyError):
        return {}
    return settings if isinstance(settings, dict) else {}


def _start(record: Path, settings: dict[str, Any], restart: bool) -> Progress | None:
    """The progress to continue from, or None for a fresh start (no record, or --restart)."""
    if restart or not record.exists():
        return None
    try:
        raw = json.loads(record.read_text(encoding="utf-8"))
        if raw.pop("format") != FORMAT:
            raise ValueError(raw)
        progress = Progress(**raw)
        kinds = (progress.settings, progress.lines, progress.output_bytes, progress.input_sha256)
        if [type(value) for value in kinds] != [dict, int, int, str] or min(kinds[1:3]) < 0:
            raise ValueError(raw)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        raise DataError(f"{record} cannot be read: add --restart to begin its output again") from None
    differ = [
        key
        for key in sorted(settings.keys() | progress.settings.keys())
        if settings.get(key) != progress.settings.get(key)
    ]
    if differ:
        said = "; ".join(
            f"{key}: {progress.settings.get(key)!r} then, {settings.get(key)!r} now" for key in differ
        )
        raise DataError(
            f"{record.name[: -len('.partial.json')]} was begun with other settings ({said}): rerun "
            "with the same ones to continue it, or add --restart to begin again"
        )
    return progress


def _append(sink: BinaryIO, data: bytes, output: Path) -> None:
    """Write `data` at the end of the partial file and make sure it is on disk before it is recorded."""
    try:
        view = memoryview(data)
        while view:  # an unbuffered write may take only part of it (a nearly full disk)
            view = view[sink.write(view) :]
        os.fsync(sink.fileno())
    except OSError as e:
        raise disk_error(output, e) from None


@contextlib.contextmanager
def _kept_once_recorded(partial: Path, record: Path) -> Iterator[None]:
    """On an error or an interruption, remove `OUT.partial` unless a record says it holds work."""
    try:
        yield
    except BaseException:
        if not record.exists():
            partial.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _locked(partial: Path) -> Iterator[BinaryIO]:
    """`OUT.partial` open for update, locked against a second writer. It stays writable by its owner
    while it is built (a read-only OUT gets its mode at the end), so that a rerun can continue it."""
    try:
        fd = os.open(partial, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise disk_error(partial, e) from None
    with open(fd, "r+b", buffering=0) as f:
        writing = f"another command is writing {partial}: wait for it to finish"
        lock_or_refuse(f.fileno(), lambda: OutputError(writing))
        try:
            same = os.path.samestat(os.fstat(f.fileno()), os.stat(partial))
        except FileNotFoundError:
            same = False
        if not same:  # locked just after another command renamed it over OUT
            raise OutputError(f"another command has just written {partial}: run again to check it")
        yield f


def command_settings(
    run_dir: Path, engine: str, identity: Mapping[str, Any], request: Request, **format: Any
) -> dict[str, Any]:
    """What a resumed command must share with the one that began OUT: the run, the engine and its
    `identity` (weight files or export, device, precision), the search, the batches, and the output's
    format (`format`: tag, scores...)."""
    return {
        "run": str(run_dir.resolve()),
        "engine": engine,
        **identity,
        "search": dataclasses.asdict(request.search),
        "max_tokens": request.max_tokens,
        **format,
    }
