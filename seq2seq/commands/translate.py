"""`s2s translate`'s work: source lines from a file or stdin, one output line per input line, in order,
into a file or stdout. From a file into a file, the output is built in OUTPUT.partial, and a command
that was interrupted continues where it stopped when it is given again (`seq2seq.translate.resume`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO, TextIO

from tqdm import tqdm

from seq2seq.commands.engines import Chosen, choose_engine, resumed_choice
from seq2seq.commands.jobs import TranslateJob
from seq2seq.data.compression import open_binary
from seq2seq.data.textio import LinesInStep, count_lines
from seq2seq.errors import DataError, Seq2SeqError
from seq2seq.files import atomic_output, check_outputs
from seq2seq.translate import resume
from seq2seq.translate.aligned import AnnotatedEngine, check_markup
from seq2seq.translate.engine import Engine, LineTranslator, prefix_refusal
from seq2seq.translate.lines import file_stamps
from seq2seq.translate.options import DecodeOptions
from seq2seq.translate.request import Request
from seq2seq.translate.reranking import line_translator
from seq2seq.translate.streams import check_std_streams, translate_stream


def translate(
    job: TranslateJob,
    input: Path | None = None,
    output: Path | None = None,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
) -> None:
    """Translate INPUT (None: `stdin`) into OUTPUT (None: `stdout`), one line out per line in, each
    written as it is decoded. `stdin`/`stdout` default to the process's. Nothing is loaded, and no
    output touched, until every file has been checked. With `job.format`, INPUT is one document."""
    if job.format is not None:
        from seq2seq.commands.documents import translate_document  # markdown-it: for documents only

        translate_document(job, input, output, stdin, stdout)
        return
    check_std_streams(input, output)
    outputs: dict[str, Path | None] = {"-o/--output": output}
    resumes = resume.resumable(input, output)
    if job.restart and not resumes:
        raise Seq2SeqError(
            "--restart begins again an output that -i FILE -o FILE was building; there is none "
            "here (standard input or output): leave it out"
        )
    if resumes:  # what an interrupted run leaves is written too
        assert output is not None
        outputs |= zip(("OUTPUT.partial", "OUTPUT.partial.json"), resume.partial_paths(output), strict=True)
    engine, placement = resumed_choice(
        job.engine, job.placement, output if resumes and not job.restart else None
    )
    prefixes = prefix_lines(job.prefix, input, outputs)
    if job.annotations.dialect is not None and input is not None:
        check_markup(input, job.annotations.dialect)
    chosen = choose_engine(job.run_dir, engine, job.asked, placement, input, outputs)
    translator = chosen.engine
    if prefixes is not None and (why := prefix_refusal(translator)) is not None:
        raise Seq2SeqError(f"--prefix: {why}")
    translator.source_tokens.prefix(job.direction)  # a language or tag it lacks fails now
    request = Request.of(
        chosen.options, direction=job.direction.direct, keep_unk=job.keep_unk, scores=job.with_scores
    )
    lines = _line_translator(job, translator, chosen.options)
    if resumes:
        assert input is not None and output is not None
        _resume_file(job, chosen, lines, request, input, output, prefixes)
        return
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(open_binary(input)) if input else stdin or sys.stdin.buffer
        # lines are written as they are decoded, to a temporary file renamed over OUTPUT at the end
        sink = stack.enter_context(atomic_output(output)) if output else stdout or sys.stdout
        bar = stack.enter_context(tqdm(disable=output is None, unit=" lines", file=sys.stderr))
        translate_stream(lines, request, source, str(input or "stdin"), sink, bar.update, prefixes)


def _resume_file(
    job: TranslateJob,
    chosen: Chosen,
    lines: LineTranslator,
    request: Request,
    input: Path,
    output: Path,
    prefixes: LinesInStep | None,
) -> None:
    """INPUT into OUTPUT through OUTPUT.partial, continuing a command of the same settings."""
    language = chosen.engine.source_tokens.language(job.direction.to)
    settings = resume.command_settings(
        job.run_dir,
        chosen.name,
        chosen.engine.identity(),
        request,
        to=language or None,  # None: as a record made before --to existed
        tag=job.direction.tag,
        keep_unk=job.keep_unk,
        scores=job.with_scores,
        prefix=file_stamps([job.prefix]) if job.prefix else None,  # None: as before --prefix
        pivot=job.direction.pivot or None,  # None: as before --pivot
        **chosen.options.record(),  # none: as before --mbr, --rerank and --restore-case
        **job.annotations.record(),
        **({"sentences": True, "src_lang": job.src_lang} if job.sentences else {}),  # none: as before
    )
    with tqdm(unit=" lines", file=sys.stderr) as bar:
        resume.translate_file(lines, request, input, output, settings, job.restart, bar.update, prefixes)


def _line_translator(job: TranslateJob, engine: Engine, options: DecodeOptions) -> LineTranslator:
    """The engine, or the engine through a pivot, or with its output annotated (not both: a pivot's
    last leg reads the pivot language, whose words are not the line's); its beam reranked and its
    lines recased as asked; with `--sentences`, any of these a sentence at a time."""
    rerank = options.rerank
    if job.direction.pivot and job.annotations.wanted:
        raise Seq2SeqError("--alignments and --markup link the output to the line given: leave --pivot out")
    if job.sentences:
        from seq2seq.commands.documents import sentence_lines  # sentencex: for sentences only

        return sentence_lines(job, engine, options)
    if job.annotations.wanted:
        if rerank.wanted:
            raise Seq2SeqError(
                "--mbr and --rerank rank whole translations: leave out --alignments and --markup"
            )
        if options.restore_case:
            raise Seq2SeqError("--restore-case rewrites the line the links are drawn on: leave it out")
        return AnnotatedEngine(engine, job.annotations)
    return line_translator(engine, job.direction, options, job.run_dir)


def prefix_lines(
    prefix: Path | None, input: Path | None, outputs: Mapping[str, Path | None]
) -> LinesInStep | None:
    """`--prefix FILE` read in step with the input, once no output is known to replace it and, for an
    input file, once both are known to have as many lines (a refused command writes nothing)."""
    if prefix is None:
        return None
    check_outputs(outputs, {"--prefix": prefix})
    if input is not None and (lines := count_lines(prefix)) != (expected := count_lines(input)):
        raise DataError(
            f"--prefix {prefix} has {lines} lines and {input} {expected}: give one for each input line"
        )
    return LinesInStep(prefix, "--prefix")
