"""`s2s translate`'s streams: check stdin/stdout, and write lines as they decode."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, BinaryIO

from seq2seq.data.textio import LinesInStep, stream_line_chunks
from seq2seq.errors import DataError
from seq2seq.translate.engine import LineTranslator
from seq2seq.translate.lines import BLANK, Translation
from seq2seq.translate.request import Request


def check_std_streams(input: Path | None, output: Path | None) -> None:
    """A closed stdin or stdout (`<&-`, `>&-`) is a clear error, not a crash in the middle of the job."""
    if input is None and sys.stdin is None:
        raise DataError("stdin is closed: give the source text with -i FILE")
    if output is None and sys.stdout is None:
        raise DataError("stdout is closed: write the translations to a file with -o FILE")
    if output is None and input is not None and _stdout_is(input):
        raise DataError(
            f"stdout is the input file {input} (`> {input.name}` empties it, `>> {input.name}` makes "
            "s2s read its own output): write the translations to another file"
        )


def _stdout_is(path: Path) -> bool:
    """Whether stdout is redirected to the regular file `path` (a terminal or pipe never is)."""
    try:
        out = os.fstat(1)
        return stat.S_ISREG(out.st_mode) and os.path.samestat(out, os.stat(path))
    except OSError:
        return False


def format_translation(result: Translation, with_scores: bool) -> str:
    """One output line: the hypotheses, tab-separated, each followed by its score when asked (`BLANK`
    for a blank one, which has none)."""
    if not with_scores:
        return "\t".join(result.texts) + "\n"
    scores = (BLANK if s is None else f"{s:.4f}" for s in result.scores)
    return "\t".join(f"{t}\t{s}" for t, s in zip(result.texts, scores, strict=True)) + "\n"


def translate_stream(
    translator: LineTranslator,
    request: Request,
    source: BinaryIO,
    source_name: str,
    sink: IO[str],
    on_chunk: Callable[[int], object],
    prefixes: LinesInStep | None = None,
) -> None:
    """Translate SOURCE chunk by chunk into SINK, one line per input line, flushed after each chunk
    (so a reader downstream sees lines as they decode); `on_chunk` gets each chunk's line count.
    With `prefixes`, each translation starts with its line of that file (`--prefix`)."""
    done = 0
    for chunk in stream_line_chunks(source, source_name):
        forced = {} if prefixes is None else {"prefixes": prefixes.take(len(chunk))}
        results = translator.translate(chunk, request, done + 1, **forced)
        sink.writelines(format_translation(result, request.scores) for result in results)
        sink.flush()
        done += len(chunk)
        on_chunk(len(chunk))
    if prefixes is not None:
        prefixes.finish()
