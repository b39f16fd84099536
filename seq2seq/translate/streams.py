"""`s2s translate`'s streams: check stdin/stdout, load a run safely, and write lines as they decode."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, BinaryIO, Protocol

from seq2seq.data.textio import LinesInStep, stream_line_chunks
from seq2seq.decoding.search import SearchSettings
from seq2seq.errors import DataError
from seq2seq.files import check_outputs
from seq2seq.run.layout import RunDir
from seq2seq.translate.options import DecodeOptions, DecodeOverrides, decode_options
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import BLANK, Translation, Translator, run_inputs


class LineTranslator(Protocol):
    """What the output loop needs of an engine: `Translator` or the CTranslate2 one."""

    def translate(
        self,
        lines: Sequence[str],
        settings: SearchSettings,
        max_tokens: int,
        first_line: int = 1,
        keep_unk: bool = False,
        scores: bool = True,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]: ...


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


def load_run_translator(
    run_dir: Path,
    asked: DecodeOverrides,
    placement: Placement,
    input: Path | None,
    outputs: Mapping[str, Path | None],
) -> tuple[Translator, DecodeOptions]:
    """RUN_DIR's translator and the options asked of it, once no output (named as the command line
    names it) is known to replace an input."""
    cfg = RunDir(run_dir).load_config()
    options = decode_options(asked, cfg.decode, cfg.model.max_positions)
    check_outputs(outputs, {"-i/--input": input, **run_inputs(run_dir, options.checkpoints)})
    return Translator.load(run_dir, options.checkpoints, placement), options


def format_translation(result: Translation, with_scores: bool) -> str:
    """One output line: the hypotheses, tab-separated, each followed by its score when asked (`BLANK`
    for a blank one, which has none)."""
    if not with_scores:
        return "\t".join(result.texts) + "\n"
    scores = (BLANK if s is None else f"{s:.4f}" for s in result.scores)
    return "\t".join(f"{t}\t{s}" for t, s in zip(result.texts, scores, strict=True)) + "\n"


def translate_stream(
    translator: LineTranslator,
    options: DecodeOptions,
    source: BinaryIO,
    source_name: str,
    sink: IO[str],
    keep_unk: bool,
    with_scores: bool,
    on_chunk: Callable[[int], object],
    prefixes: LinesInStep | None = None,
) -> None:
    """Translate SOURCE chunk by chunk into SINK, one line per input line, flushed after each chunk
    (so a reader downstream sees lines as they decode); `on_chunk` gets each chunk's line count.
    With `prefixes`, each translation starts with its line of that file (`--prefix`)."""
    done = 0
    for chunk in stream_line_chunks(source, source_name):
        forced = {} if prefixes is None else {"prefixes": prefixes.take(len(chunk))}
        results = translator.translate(
            chunk, options.search, options.max_tokens, done + 1, keep_unk, scores=with_scores, **forced
        )
        sink.writelines(format_translation(result, with_scores) for result in results)
        sink.flush()
        done += len(chunk)
        on_chunk(len(chunk))
    if prefixes is not None:
        prefixes.finish()
