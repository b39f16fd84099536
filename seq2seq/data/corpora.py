"""A training corpus's text as aligned pairs, streamed: two aligned files, or one TSV file.

A TSV corpus (`source<TAB>target` on each line, the layout of OPUS's and most exports) is split on
its one tab; a line with none or several is an error naming the file and the line. Either kind may
be compressed (`seq2seq.data.compression`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from seq2seq.config.data import CorpusConfig, DataConfig
from seq2seq.data.textio import count_lines, iter_line_chunks
from seq2seq.errors import DataError

Pairs = tuple[list[str], list[str]]  # (source lines, target lines), aligned


def count_pairs(corpus: CorpusConfig) -> int:
    """The corpus's pairs, counted without decoding (two files: each must have as many lines)."""
    if corpus.tsv:
        return count_lines(corpus.tsv)
    src_lines, tgt_lines = count_lines(corpus.src), count_lines(corpus.tgt)
    if src_lines != tgt_lines:
        raise DataError(
            f"{corpus.src} has {src_lines} lines but {corpus.tgt} has {tgt_lines}: parallel files must "
            "align line by line"
        )
    return src_lines


def check_aligned(corpora: Sequence[CorpusConfig]) -> None:
    """Each corpus of two files has as many lines in both (a TSV corpus is aligned by its layout,
    so it is not read here)."""
    for corpus in corpora:
        if not corpus.tsv:
            count_pairs(corpus)


def pair_chunks(corpus: CorpusConfig, size: int = 20_000) -> Iterator[Pairs]:
    """The corpus's pairs in chunks of at most `size`, in order, streamed."""
    if corpus.tsv:
        yield from _tsv_chunks(corpus.tsv, size)
        return
    src_chunks, tgt_chunks = iter_line_chunks(corpus.src), iter_line_chunks(corpus.tgt)
    src_lines: list[str] = []
    tgt_lines: list[str] = []
    while True:
        for lines, chunks in ((src_lines, src_chunks), (tgt_lines, tgt_chunks)):
            while len(lines) < size and (more := next(chunks, None)) is not None:
                lines += more
        count = min(len(src_lines), len(tgt_lines), size)
        if not count:
            return
        yield src_lines[:count], tgt_lines[:count]
        del src_lines[:count], tgt_lines[:count]


def side_chunks(corpus: CorpusConfig, side: str) -> Iterator[list[str]]:
    """The lines of one side ("src" or "tgt") of the corpus, in chunks (what a tokenizer learns from)."""
    if not corpus.tsv:
        yield from iter_line_chunks(corpus.src if side == "src" else corpus.tgt)
        return
    for src, tgt in _tsv_chunks(corpus.tsv, 20_000):
        yield src if side == "src" else tgt


def _tsv_chunks(path: str, size: int) -> Iterator[Pairs]:
    line_no = 1
    for lines in iter_line_chunks(path):
        for start in range(0, len(lines), size):
            fields = [line.split("\t") for line in lines[start : start + size]]
            bad = next((i for i, f in enumerate(fields) if len(f) != 2), None)
            if bad is not None:
                tabs = len(fields[bad]) - 1
                raise DataError(
                    f"{path}: line {line_no + start + bad} has {tabs} tabs; a TSV corpus has exactly one "
                    "per line (source<TAB>target)"
                )
            yield [f[0] for f in fields], [f[1] for f in fields]
        line_no += len(lines)


def file_corpora(
    src_files: Sequence[str | Path], tgt_files: Sequence[str | Path]
) -> tuple[CorpusConfig, ...]:
    """The corpora of aligned file pairs, as `data.train_src`/`train_tgt` name them (weight 1 each)."""
    return DataConfig(
        train_src=tuple(map(str, src_files)), train_tgt=tuple(map(str, tgt_files))
    ).training_corpora()
