"""Tokenize parallel text into flat id arrays with worker processes, streaming the files in chunks.

The main process reads aligned chunks of lines and writes each result in order as it comes back;
the workers tokenize and apply the length filter. Memory holds a few chunks at a time, whatever
the corpus size.
"""

from __future__ import annotations

import hashlib
import os
import signal
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, compress
from pathlib import Path
from typing import Any

import numpy as np

from seq2seq.data.textio import count_lines, iter_line_chunks
from seq2seq.data.tokenizer import TokenizerPair, load_tokenizers
from seq2seq.data.workers import spawned_pool
from seq2seq.errors import DataError
from seq2seq.special import UNK

CHUNK_PAIRS = 20_000  # pairs per task: large enough to amortize the hand-over, small enough to stream

Limits = tuple[int, float]  # (data.max_len, data.max_len_ratio)


@dataclass
class EncodedCorpus:
    """What `encode_corpus` wrote, for the manifest."""

    counts: dict[str, int]  # read, kept, empty, too_long, bad_ratio
    arrays: dict[str, dict[str, Any]]  # "src.ids", ... -> {"dtype", "bytes", "sha256"}
    stats: dict[str, dict[str, Any]]  # "src"/"tgt" -> tokens, mean, p50, p90, p99, max, unk_share


@dataclass
class _Chunk:
    """One encoded chunk: the kept pairs' ids and lengths per side, and why the others were dropped."""

    ids: dict[str, np.ndarray]  # side -> (tokens,) ids of the kept pairs, concatenated
    lengths: dict[str, np.ndarray]  # side -> (kept,) int32
    counts: dict[str, int]


def check_aligned(pairs: list[tuple[str, str]]) -> None:
    """Each source file has as many lines as its target file (counted without decoding)."""
    for src, tgt in pairs:
        src_lines, tgt_lines = count_lines(src), count_lines(tgt)
        if src_lines != tgt_lines:
            raise DataError(
                f"{src} has {src_lines} lines but {tgt} has {tgt_lines}: parallel files must align "
                "line by line"
            )


def encode_corpus(
    pairs: list[tuple[str, str]],
    tokenizer_dir: Path,
    joint: bool,
    limits: Limits,
    out_dir: Path,
    workers: int,
) -> EncodedCorpus:
    """Encode the (source file, target file) pairs, in order, into `out_dir/train.{src,tgt}.{ids,offsets}`.

    The tokenizers are those in `tokenizer_dir`; a reader's targets become label ids (its pair's
    `target_ids`). Pairs with an empty side, a side longer than `max_len` tokens, or a length ratio
    above `max_len_ratio` (0 = no limit) are dropped and counted. `workers` > 1 encodes in that many
    processes.
    """
    check_aligned(pairs)
    tokenizers = load_tokenizers(tokenizer_dir, joint)
    vocabularies = {"src": tokenizers.src, "tgt": tokenizers.tgt}
    pieces = ("src", "tgt") if tokenizers.task == "translate" else ("src",)  # label ids are not pieces
    dtypes = {side: _id_dtype(v.vocab_size) for side, v in vocabularies.items()}
    writers = {
        f"{side}.ids": _ArrayWriter(out_dir / f"train.{side}.ids", dtype) for side, dtype in dtypes.items()
    }
    lengths: dict[str, list[np.ndarray]] = {side: [] for side in dtypes}
    counts = dict.fromkeys(("read", "kept", "empty", "too_long", "bad_ratio"), 0)
    unknown = dict.fromkeys(dtypes, 0)
    tasks = ((src, tgt, limits, dtypes) for src, tgt in _aligned_chunks(pairs, CHUNK_PAIRS))
    for chunk in _run(tasks, (tokenizer_dir, joint), workers):
        for side in dtypes:
            writers[f"{side}.ids"].write(chunk.ids[side])
            lengths[side].append(chunk.lengths[side])
            if side in pieces:
                unknown[side] += int(np.count_nonzero(chunk.ids[side] == UNK))
        for key, value in chunk.counts.items():
            counts[key] += value
    stats, costs = {}, None
    for side in dtypes:
        side_lengths = np.concatenate(lengths[side]) if lengths[side] else np.zeros(0, np.int32)
        offsets = np.zeros(len(side_lengths) + 1, dtype=np.int64)
        np.cumsum(side_lengths, out=offsets[1:])
        writers[f"{side}.offsets"] = _ArrayWriter(out_dir / f"train.{side}.offsets", offsets.dtype)
        writers[f"{side}.offsets"].write(offsets)
        stats[side] = _length_stats(side_lengths, unknown[side])
        costs = side_lengths if costs is None else np.maximum(costs, side_lengths)
    # what bucketing sorts by (`ParallelData.costs`), stored so that every rank maps one copy
    writers["costs"] = _ArrayWriter(out_dir / "train.costs", np.int32)
    writers["costs"].write(costs + 1)
    return EncodedCorpus(counts, {name: w.close() for name, w in writers.items()}, stats)


def _aligned_chunks(pairs: list[tuple[str, str]], size: int) -> Iterator[tuple[list[str], list[str]]]:
    """(source lines, target lines) of at most `size` pairs, file pair after file pair, streamed."""
    for src, tgt in pairs:
        src_chunks, tgt_chunks = iter_line_chunks(src), iter_line_chunks(tgt)
        src_lines: list[str] = []
        tgt_lines: list[str] = []
        while True:
            for lines, chunks in ((src_lines, src_chunks), (tgt_lines, tgt_chunks)):
                while len(lines) < size and (more := next(chunks, None)) is not None:
                    lines += more
            count = min(len(src_lines), len(tgt_lines), size)
            if not count:
                break
            yield src_lines[:count], tgt_lines[:count]
            del src_lines[:count], tgt_lines[:count]


def _run(tasks: Iterator[tuple], tokenizers: tuple[Path, bool], workers: int) -> Iterator[_Chunk]:
    """`_encode_chunk` of each task, in task order; with workers, at most 2 per worker in flight.

    `tokenizers` is (directory, joint), what each worker loads them from.
    """
    if workers <= 1:
        _load_tokenizers(*tokenizers, quiet=False)
        yield from map(_encode_chunk, tasks)
        return
    with spawned_pool(workers, "tokenizing the corpus", _load_tokenizers, tokenizers) as pool:
        pending: deque = deque()
        for task in tasks:
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
            pending.append(pool.submit(_encode_chunk, task))
        while pending:
            yield pending.popleft().result()


_LOADED: dict[str, TokenizerPair] = {}  # "pair": this process's tokenizers, loaded once by `_load_tokenizers`


def _load_tokenizers(directory: Path, joint: bool, quiet: bool = True) -> None:
    if quiet:  # a worker: Ctrl-C is for the main process, which stops the pool
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _LOADED["pair"] = load_tokenizers(directory, joint)


def _encode_chunk(task: tuple[list[str], list[str], Limits, dict[str, np.dtype]]) -> _Chunk:
    """Tokenize one chunk of pairs and apply the filter (the same rules, in the same order, as ever)."""
    src_lines, tgt_lines, (max_len, max_ratio), dtypes = task
    tokenizers = _LOADED["pair"]
    has_text = [bool(s.strip() and t.strip()) for s, t in zip(src_lines, tgt_lines)]
    sources = tokenizers.src.encode(list(compress(src_lines, has_text)), threads=1)
    targets = tokenizers.target_ids(sources, list(compress(tgt_lines, has_text)), threads=1)
    encoded = {"src": sources, "tgt": targets}
    lens = {side: np.fromiter(map(len, seqs), np.int32, len(seqs)) for side, seqs in encoded.items()}
    too_long = (lens["src"] > max_len) | (lens["tgt"] > max_len)
    longer, shorter = (
        np.maximum(lens["src"], lens["tgt"]),
        np.maximum(np.minimum(lens["src"], lens["tgt"]), 1),
    )
    bad_ratio = ~too_long & (max_ratio > 0) & (longer > max_ratio * shorter)
    keep = ~(too_long | bad_ratio)
    ids = {}
    for side, seqs in encoded.items():
        kept = list(compress(seqs, keep))
        total = int(lens[side][keep].sum())
        ids[side] = np.fromiter(chain.from_iterable(kept), dtypes[side], total)
    counts = {
        "read": len(src_lines),
        "kept": int(keep.sum()),
        "empty": len(src_lines) - len(encoded["src"]),
        "too_long": int(too_long.sum()),
        "bad_ratio": int(bad_ratio.sum()),
    }
    return _Chunk(ids, {side: lens[side][keep] for side in lens}, counts)


def _id_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


def _length_stats(lengths: np.ndarray, unknown: int) -> dict[str, Any]:
    tokens = int(lengths.sum(dtype=np.int64))
    p50, p90, p99 = (
        np.quantile(lengths, [0.5, 0.9, 0.99], method="higher").tolist() if len(lengths) else (0, 0, 0)
    )
    return {
        "tokens": tokens,
        "mean": round(tokens / max(len(lengths), 1), 2),
        "p50": int(p50),
        "p90": int(p90),
        "p99": int(p99),
        "max": int(lengths.max(initial=0)),
        "unk_share": unknown / max(tokens, 1),
    }


class _ArrayWriter:
    """Appends arrays to a raw binary file, keeping its size and sha256 as it goes."""

    def __init__(self, path: Path, dtype: np.dtype) -> None:
        self.file = path.open("wb")
        self.sha = hashlib.sha256()
        self.bytes = 0
        self.dtype = np.dtype(dtype)

    def write(self, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array, dtype=self.dtype)
        self.file.write(array.data)
        self.sha.update(array.data)
        self.bytes += array.nbytes

    def close(self) -> dict[str, Any]:
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        return {"dtype": self.dtype.str, "bytes": self.bytes, "sha256": self.sha.hexdigest()}
