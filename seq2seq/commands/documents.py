"""`s2s translate --format`: one document in (a file, or stdin), the same document out with its text
translated, into a file (built aside and renamed over it when whole) or stdout.

The document is read and split (`seq2seq.markup.formats`) before anything is loaded: a document
that is not UTF-8 text, or an xml document that is not well formed, is refused and nothing is
written. Its blocks are translated sentence by sentence with their tags put back
(`seq2seq.translate.documents`), through the run's engine (and `--mbr` or `--rerank`, where asked).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO, TextIO

from tqdm import tqdm

from seq2seq.align import Pair
from seq2seq.commands.engines import choose_engine
from seq2seq.commands.jobs import TranslateJob
from seq2seq.data.compression import open_binary
from seq2seq.errors import DataError, Seq2SeqError
from seq2seq.files import atomic_output
from seq2seq.markup.formats import document_format
from seq2seq.translate.aligned import AnnotatedEngine
from seq2seq.translate.annotations import Annotations
from seq2seq.translate.documents import BlockTranslator
from seq2seq.translate.engine import Engine
from seq2seq.translate.options import DecodeOptions
from seq2seq.translate.request import Request
from seq2seq.translate.reranking import line_translator
from seq2seq.translate.sentence_lines import SentenceLines
from seq2seq.translate.sentences import Sentences
from seq2seq.translate.streams import check_std_streams


def translate_document(
    job: TranslateJob,
    input: Path | None = None,
    output: Path | None = None,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
) -> None:
    """Translate the document INPUT (None: `stdin`) into OUTPUT (None: `stdout`) as `job.format`."""
    assert job.format is not None
    check_std_streams(input, output)
    refuse_line_options(job)
    kind = document_format(job.format)
    document = kind.read(read_text(input, stdin))  # a malformed document is refused before loading
    chosen = choose_engine(job.run_dir, job.engine, job.asked, job.placement, input, {"-o/--output": output})
    engine = chosen.engine
    engine.source_tokens.prefix(job.direction)  # a language or tag it lacks fails now
    links = AnnotatedEngine(engine, Annotations()).word_links  # a reader, which draws none, fails here
    lines = line_translator(engine, job.direction, chosen.options, job.run_dir)  # --pivot is refused above
    request = Request.of(chosen.options, direction=job.direction.direct, keep_unk=job.keep_unk, scores=False)
    sentences = Sentences(job.src_lang or engine.config.data.src_lang)
    with tqdm(unit=" sentences", disable=output is None, file=sys.stderr) as bar:
        written = BlockTranslator(lines, links, sentences).document(document, request, bar.update)
    if output is None:
        sink = stdout or sys.stdout
        sink.write(written)
        sink.flush()
        return
    with atomic_output(output) as file:
        file.write(written)


def refuse_line_options(job: TranslateJob) -> None:
    """The options of line mode that a document has no place for."""
    asked = {
        "--markup": job.annotations.markup is not None,
        "--alignments": job.annotations.alignments,
        "--scores": job.scores,
        "--nbest": job.asked.nbest > 1,
        "--prefix": job.prefix is not None,
        "--pivot": bool(job.direction.pivot),
        "--restart": job.restart,
    }
    if given := [name for name, on in asked.items() if on]:
        raise Seq2SeqError(
            f"--format translates a document into one document: leave out {', '.join(given)} "
            "(they ask for lines out, one per line in)"
        )


def read_text(input: Path | None, stdin: BinaryIO | None = None) -> str:
    """The whole of INPUT (None: stdin) as UTF-8 text; `DataError` saying where it is not."""
    where = str(input or "stdin")
    if input is None:
        data = (stdin or sys.stdin.buffer).read()
    else:
        with open_binary(input) as file:
            data = file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataError(f"{where}: line {line} is not valid UTF-8: give a UTF-8 document") from None
    if "\0" in text:
        raise DataError(f"{where} holds a NUL byte: not a text document (UTF-16?); give it as UTF-8")
    return text


def sentence_lines(job: TranslateJob, engine: Engine, options: DecodeOptions) -> SentenceLines:
    """`--sentences`: ENGINE (through a pivot, its beam reranked, its lines recased, as asked)
    translating each line sentence by sentence, with its markup put back and its alignment as asked."""
    refused = {"--scores": job.scores, "--nbest": job.asked.nbest > 1, "--prefix": job.prefix is not None}
    if given := [name for name, on in refused.items() if on]:
        raise Seq2SeqError(
            f"--sentences joins one translation of each sentence: leave out {', '.join(given)}"
        )
    lines = line_translator(engine, job.direction, options, job.run_dir)
    # the links place tags and make alignments: without either, none is drawn
    links = AnnotatedEngine(engine, Annotations()).word_links if job.annotations.wanted else _no_links
    blocks = BlockTranslator(lines, links, Sentences(job.src_lang or engine.config.data.src_lang))
    return SentenceLines(blocks, job.annotations.dialect, job.annotations.alignments)


def _no_links(source: str, translation: str, request: Request) -> list[Pair]:
    return []
