"""Tokenize a corpus into flat id arrays with worker processes, streaming its text in chunks.

The main process reads aligned chunks of pairs and writes each result in order as it comes back;
the workers apply the text rules, tokenize and apply the length filter; the main process then drops
duplicates (they need every earlier pair: `seq2seq.data.cleaning.SeenPairs`). Memory holds a few
chunks at a time and the duplicate table, whatever the corpus size.
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
from numpy.typing import DTypeLike

from seq2seq.config.bounds import SAMPLE_KEEP
from seq2seq.config.data import CleanConfig, CorpusConfig
from seq2seq.data.cleaning import CODE, KEEP, REASONS, SeenPairs, pair_hashes, text_reasons
from seq2seq.data.corpora import Pairs, pair_chunks
from seq2seq.data.tokenizer import TokenizerPair, load_tokenizers
from seq2seq.data.workers import spawned_pool
from seq2seq.special import UNK

CHUNK_PAIRS = 20_000  # pairs per task: large enough to amortize the hand-over, small enough to stream
REASONS_FILE = "reasons.u8"  # one byte per pair read: why it was dropped (`cleaning.CODE`), 0 if kept

Limits = tuple[int, float]  # (data.max_len, data.max_len_ratio)


@dataclass(frozen=True)
class Rules:
    """What decides a corpus's pairs: the length filter, its cleaning rules, and its source prefix."""

    limits: Limits
    clean: CleanConfig
    languages: tuple[str, str]  # the corpus's (source, target) languages: `DataConfig.corpus_languages`
    prefix: tuple[int, ...] = ()  # control ids put before every source (`seq2seq.data.control`)


@dataclass
class EncodedCorpus:
    """What `encode_corpus` wrote, for the manifest."""

    counts: dict[str, int]  # read, kept, and one count per reason of `REASONS`
    arrays: dict[str, dict[str, Any]]  # "src.ids", ... -> {"dtype", "bytes", "sha256"}
    stats: dict[str, dict[str, Any]]  # "src"/"tgt" -> tokens, mean, p50, p90, p99, max, unk_share
    dropped: dict[str, list[list[Any]]]  # reason -> up to SAMPLE_KEEP [line, source, target]


@dataclass
class _Chunk:
    """One encoded chunk: the kept pairs' ids and lengths per side, and why the others were dropped."""

    ids: dict[str, np.ndarray]  # side -> (tokens,) ids of the kept pairs, concatenated
    lengths: dict[str, np.ndarray]  # side -> (kept,) int32
    counts: dict[str, int]
    hashes: np.ndarray | None  # (kept,) uint64 `pair_hashes` of the kept pairs, when deduplicating
    first_line: int  # the line number of the chunk's first pair
    codes: np.ndarray  # (read,) uint8 why each pair of the chunk was dropped (`cleaning.CODE`), KEEP if not
    dropped: list[tuple[str, int, str, str]]  # (reason, line, source, target), a few per reason
    texts: tuple[list[str], list[str]]  # the kept pairs' text, only when deduplicating (for samples)


def encode_corpus(
    corpus: CorpusConfig,
    pairs: int,
    tokenizer_dir: Path,
    joint: bool,
    rules: Rules,
    out_dir: Path,
    workers: int,
) -> EncodedCorpus:
    """Encode one corpus, in order, into `out_dir/train.{src,tgt}.{ids,offsets}`; `pairs` is its
    length, what the duplicate table is sized for (needed only with `rules.clean.dedup`).

    The tokenizers are those in `tokenizer_dir`; a reader's targets become label ids (its pair's
    `target_ids`). Each pair is kept or dropped by `rules` (`seq2seq.data.cleaning`), and counted.
    `workers` > 1 encodes in that many processes.
    """
    tokenizers = load_tokenizers(tokenizer_dir, joint)
    vocabularies = {"src": tokenizers.src, "tgt": tokenizers.tgt}
    pieces = tokenizers.targets.piece_sides  # label ids are not pieces: none is <unk>
    dtypes = {side: _id_dtype(v.vocab_size) for side, v in vocabularies.items()}
    writers = {
        f"{side}.ids": _ArrayWriter(out_dir / f"train.{side}.ids", dtype) for side, dtype in dtypes.items()
    }
    reasons = _ArrayWriter(out_dir / REASONS_FILE, np.uint8)
    lengths: dict[str, list[np.ndarray]] = {side: [] for side in dtypes}
    counts = dict.fromkeys(("read", "kept", *REASONS), 0)
    dropped: dict[str, list[list[Any]]] = {}
    unknown = dict.fromkeys(dtypes, 0)
    seen = SeenPairs(pairs) if rules.clean.dedup else None
    tasks = (
        (src, tgt, first, rules, dtypes) for first, (src, tgt) in _numbered(pair_chunks(corpus, CHUNK_PAIRS))
    )
    for chunk in _run(tasks, (tokenizer_dir, joint), workers):
        if seen is not None:
            chunk = _without_duplicates(chunk, seen)
        reasons.write(chunk.codes)
        for side in dtypes:
            writers[f"{side}.ids"].write(chunk.ids[side])
            lengths[side].append(chunk.lengths[side])
            if side in pieces:
                unknown[side] += int(np.count_nonzero(chunk.ids[side] == UNK))
        for key, value in chunk.counts.items():
            counts[key] += value
        for reason, line, src, tgt in chunk.dropped:
            if len(kept := dropped.setdefault(reason, [])) < SAMPLE_KEEP:
                kept.append([line, src, tgt])
    reasons.close()
    stats = _finish_sides(writers, lengths, unknown, out_dir)
    return EncodedCorpus(counts, {name: w.close() for name, w in writers.items()}, stats, dropped)


def _finish_sides(
    writers: dict[str, _ArrayWriter],
    lengths: dict[str, list[np.ndarray]],
    unknown: dict[str, int],
    out_dir: Path,
) -> dict[str, dict[str, Any]]:
    """Write each side's offsets and the pairs' costs (the longer side's length + 1: what bucketing
    sorts by, stored so that every rank maps one copy); returns each side's length statistics."""
    stats, costs = {}, None
    for side, chunks in lengths.items():
        side_lengths = np.concatenate(chunks) if chunks else np.zeros(0, np.int32)
        offsets = np.zeros(len(side_lengths) + 1, dtype=np.int64)
        np.cumsum(side_lengths, out=offsets[1:])
        writers[f"{side}.offsets"] = _ArrayWriter(out_dir / f"train.{side}.offsets", offsets.dtype)
        writers[f"{side}.offsets"].write(offsets)
        stats[side] = _length_stats(side_lengths, unknown[side])
        costs = side_lengths if costs is None else np.maximum(costs, side_lengths)
    assert costs is not None  # set by the first side
    writers["costs"] = _ArrayWriter(out_dir / "train.costs", np.int32)
    writers["costs"].write(costs + 1)
    return stats


def _numbered(chunks: Iterator[Pairs]) -> Iterator[tuple[int, Pairs]]:
    """Each chunk with the line number of its first pair."""
    line = 1
    for chunk in chunks:
        yield line, chunk
        line += len(chunk[0])


def _without_duplicates(chunk: _Chunk, seen: SeenPairs) -> _Chunk:
    """`chunk` without the pairs `seen` already holds (or that repeat within it), which it now holds."""
    assert chunk.hashes is not None
    new = seen.add(chunk.hashes)
    if new.all():
        return chunk
    repeated = np.flatnonzero(~new)
    src, tgt = chunk.texts
    kept = np.flatnonzero(chunk.codes == KEEP)  # (kept,) positions in the chunk of the kept pairs
    samples = [("duplicate", chunk.first_line + int(kept[i]), src[i], tgt[i]) for i in repeated[:SAMPLE_KEEP]]
    codes = chunk.codes.copy()
    codes[kept[repeated]] = CODE["duplicate"]
    ids = {side: chunk.ids[side][np.repeat(new, chunk.lengths[side])] for side in chunk.ids}
    counts = chunk.counts | {"kept": chunk.counts["kept"] - len(repeated), "duplicate": len(repeated)}
    return _Chunk(
        ids,
        {side: lengths[new] for side, lengths in chunk.lengths.items()},
        counts,
        chunk.hashes[new],
        chunk.first_line,
        codes,
        chunk.dropped + samples,
        ([], []),
    )


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


def _encode_chunk(task: tuple[list[str], list[str], int, Rules, dict[str, np.dtype]]) -> _Chunk:
    """Tokenize one chunk of pairs and apply the rules (in the order of `cleaning.REASONS`)."""
    src_lines, tgt_lines, first_line, rules, dtypes = task
    (max_len, max_ratio), tokenizers = rules.limits, _LOADED["pair"]
    codes = text_reasons(src_lines, tgt_lines, rules.clean, rules.languages)  # (N,)
    passed = np.flatnonzero(codes == KEEP)
    sources = tokenizers.src.encode([src_lines[i] for i in passed], threads=1)
    targets = tokenizers.target_ids(sources, [tgt_lines[i] for i in passed], threads=1)
    lens = {
        side: np.fromiter(map(len, seqs), np.int32, len(seqs))
        for side, seqs in (("src", sources), ("tgt", targets))
    }
    too_long = (lens["src"] > max_len) | (lens["tgt"] > max_len)
    longer, shorter = (
        np.maximum(lens["src"], lens["tgt"]),
        np.maximum(np.minimum(lens["src"], lens["tgt"]), 1),
    )
    bad_ratio = ~too_long & (max_ratio > 0) & (longer > max_ratio * shorter)
    codes[passed[too_long]], codes[passed[bad_ratio]] = CODE["too_long"], CODE["bad_ratio"]
    keep = ~(too_long | bad_ratio)
    kept = passed[keep]
    if rules.prefix:  # after the length rules, which read the text's own tokens
        sources = [[*rules.prefix, *ids] for ids in sources]
        lens["src"] += len(rules.prefix)
    ids = {}
    for side, seqs in (("src", sources), ("tgt", targets)):
        total = int(lens[side][keep].sum())
        ids[side] = np.fromiter(chain.from_iterable(compress(seqs, keep)), dtypes[side], total)
    counts = {"read": len(src_lines), "kept": len(kept)} | {
        reason: int(np.count_nonzero(codes == CODE[reason])) for reason in REASONS
    }
    dropped = [
        (reason, first_line + int(i), src_lines[i], tgt_lines[i])
        for reason in REASONS
        for i in np.flatnonzero(codes == CODE[reason])[:SAMPLE_KEEP]
    ]
    dedup = rules.clean.dedup
    kept_src, kept_tgt = ([src_lines[i] for i in kept], [tgt_lines[i] for i in kept]) if dedup else ([], [])
    return _Chunk(
        ids,
        {side: lens[side][keep] for side in lens},
        counts,
        pair_hashes(kept_src, kept_tgt) if dedup else None,
        first_line,
        codes,
        dropped,
        (kept_src, kept_tgt),
    )


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
        "histogram": np.bincount(lengths).tolist(),  # pairs of each length (at most data.max_len + 2)
    }


class _ArrayWriter:
    """Appends arrays to a raw binary file, keeping its size and sha256 as it goes."""

    def __init__(self, path: Path, dtype: DTypeLike) -> None:
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


SMALL_CORPUS_BYTES = 16 << 20  # Multi30k is 4.5 MB: a few seconds in this process (compressed: ~5x more)


def default_workers(corpus: CorpusConfig) -> int:
    """Encoding processes for `corpus` when none are asked: none for a small one (it encodes faster
    than worker processes start), else one per CPU core this process may use."""
    text_bytes = sum(Path(p).stat().st_size for p in corpus.files().values())
    if text_bytes < SMALL_CORPUS_BYTES:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
