"""The word alignments of a prepared corpus, for guided alignment: made after its pairs are encoded.

    NAME/train.align.pairs    (K, 2) int16 (int32 for longer sequences): (target piece, source position)
    NAME/train.align.offsets  int64, N + 1 entries: pair i's links are pairs[offsets[i]:offsets[i + 1]]

eflomal aligns the words (whitespace-separated tokens) of the corpus's kept pairs, the text as given,
in both directions, symmetrized by grow-diag-final-and (`seq2seq.align.eflomal_aligner`). Each word
link links every piece of the target word to every piece of the source word (`seq2seq.align.pieces`),
the source positions counted after the corpus's control tokens (a language token, a tag), as the
model reads them (`seq2seq.data.links`). A pair whose pieces do not make as many words as its text
does (a word the tokenizer's normalization removed) gets no links and is counted.

The manifest's `alignments` records what they were made from (the checksums of the id arrays they
index), their arrays' sizes and checksums, and counts. They are made again, alone, when those ids
change or an array is damaged; turning guided alignment on never encodes the pairs again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seq2seq.align import Pair
from seq2seq.align.eflomal_aligner import align_words
from seq2seq.align.pieces import aligned_source_pieces, word_of_piece
from seq2seq.config.data import CorpusConfig
from seq2seq.data.cleaning import KEEP
from seq2seq.data.corpora import pair_chunks
from seq2seq.data.encode import REASONS_FILE
from seq2seq.data.links import Links
from seq2seq.data.manifest import MANIFEST, array_damage, shape_problem
from seq2seq.data.parallel import ParallelData
from seq2seq.data.tokenizer import Tokenizer, TokenizerPair
from seq2seq.errors import DataError
from seq2seq.files import write_text

log = logging.getLogger(__name__)

FORMAT = 1  # raise when the links change meaning: alignments made before are then made again
ALIGN_ARRAYS = ("align.pairs", "align.offsets")
ALIGNER = "eflomal, grow-diag-final-and"
CHUNK_PAIRS = 20_000  # pairs turned into piece links at a time
SHAPE: dict[Any, Any] = {
    "made_from": {"format": int, "aligner": str, "ids": {str: str}},
    "arrays": {name: {"dtype": str, "bytes": int, "sha256": str} for name in ALIGN_ARRAYS},
    "counts": {"linked": int, "links": int, "unmatched": int},
}


def alignments_made_from(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a corpus's alignments depend on: its pairs' ids as encoded (their arrays' checksums)."""
    ids = {name: manifest["arrays"][name]["sha256"] for name in ("src.ids", "tgt.ids")}
    return {"format": FORMAT, "aligner": ALIGNER, "ids": ids}


def alignments_stale(directory: Path, manifest: dict[str, Any]) -> str | None:
    """Why the alignments beside the prepared corpus in `directory` cannot be used, or None."""
    section = manifest.get("alignments")
    if section is None:
        return "no word alignments there yet"
    if problem := shape_problem(section, SHAPE, "alignments"):
        return f"its alignments record is unreadable ({problem})"
    if section["made_from"] != alignments_made_from(manifest):
        return "its pairs were encoded again since they were aligned"
    return array_damage(directory, section["arrays"], ALIGN_ARRAYS)


def ensure_alignments(
    directory: Path,
    corpus: CorpusConfig,
    manifest: dict[str, Any],
    data: ParallelData,
    tokenizers: TokenizerPair,
) -> dict[str, Any]:
    """The manifest of the prepared corpus in `directory` with usable alignments: reused, or made from
    the text of `corpus` and its prepared pairs `data` (their pieces by `tokenizers`) and written
    beside them. An aligner that is missing or fails is an `AlignmentError`."""
    reason = alignments_stale(directory, manifest)
    if reason is None:
        log.info("reusing the word alignments of corpus %s", corpus.name)
        return manifest
    log.info("word-aligning corpus %s (%s pairs): %s", corpus.name, f"{len(data):,}", reason)
    src_lines, tgt_lines = _kept_text(corpus, directory, manifest)
    words = align_words(src_lines, tgt_lines)
    shift = len(manifest["made_from"]["prefix"])
    pieces = tokenizers.src, tokenizers.tgt_tokenizer
    links, unmatched = piece_links(words, src_lines, tgt_lines, data, shift, pieces)
    if unmatched:
        log.warning(
            "corpus %s: %s pairs get no alignment (their pieces make other words than their text)",
            corpus.name,
            f"{unmatched:,}",
        )
    counts = {"linked": int(np.count_nonzero(np.diff(links.offsets))), "links": len(links.pairs)}
    section = {
        "made_from": alignments_made_from(manifest),
        "arrays": _write_links(directory, links),
        "counts": counts | {"unmatched": unmatched},
    }
    manifest = manifest | {"alignments": section}
    write_text(directory / MANIFEST, json.dumps(manifest, indent=2) + "\n")  # last, atomically
    return manifest


def _kept_text(
    corpus: CorpusConfig, directory: Path, manifest: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """The source and target lines of the pairs the prepared corpus kept, in order."""
    codes = np.fromfile(directory / REASONS_FILE, dtype=np.uint8)  # (read,) why each pair was dropped
    if len(codes) != manifest["counts"]["read"] or np.count_nonzero(codes == KEEP) != manifest["pairs"]:
        raise DataError(
            f"{directory / REASONS_FILE} does not match its manifest: remove {directory} and prepare again"
        )
    src: list[str] = []
    tgt: list[str] = []
    start = 0
    for src_chunk, tgt_chunk in pair_chunks(corpus):
        kept = np.flatnonzero(codes[start : start + len(src_chunk)] == KEEP)
        src += [src_chunk[i] for i in kept]
        tgt += [tgt_chunk[i] for i in kept]
        start += len(src_chunk)
    return src, tgt


def piece_links(
    words: Sequence[Sequence[Pair]],
    src_lines: Sequence[str],
    tgt_lines: Sequence[str],
    data: ParallelData,
    shift: int,
    tokenizers: tuple[Tokenizer, Tokenizer],
) -> tuple[Links, int]:
    """The piece links of each pair of `data` from its word links `words` (`(source word, target
    word)`), and how many pairs got none because their pieces make other words than their text.

    A source id array starts with `shift` control ids, which the pieces skip and the positions count.
    """
    vocabularies = [tokenizer.id_pieces(range(tokenizer.vocab_size)) for tokenizer in tokenizers]
    chunks: list[np.ndarray] = []
    counts = np.zeros(len(data), dtype=np.int64)
    unmatched = 0
    for start in range(0, len(data), CHUNK_PAIRS):
        rows = range(start, min(start + CHUNK_PAIRS, len(data)))
        for n, src_ids, tgt_ids in zip(rows, *data.pairs(rows), strict=True):
            src_word_of = word_of_piece([vocabularies[0][i] for i in src_ids[shift:]])
            tgt_word_of = word_of_piece([vocabularies[1][i] for i in tgt_ids])
            if _word_count(src_word_of) != len(src_lines[n].split()) or _word_count(tgt_word_of) != len(
                tgt_lines[n].split()
            ):
                unmatched += 1
                continue
            sources = aligned_source_pieces(words[n], src_word_of, tgt_word_of, shift)
            found = [(t, s) for t, linked in enumerate(sources) for s in linked]
            counts[n] = len(found)
            chunks.append(np.array(found, dtype=np.int64).reshape(-1, 2))
    pairs = np.concatenate(chunks) if chunks else np.zeros((0, 2), np.int64)
    dtype = np.int16 if pairs.size == 0 or pairs.max() < 2**15 else np.int32
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Links(pairs.astype(dtype), offsets), unmatched


def _word_count(word_of: Sequence[int]) -> int:
    return word_of[-1] + 1 if word_of else 0


def _write_links(directory: Path, links: Links) -> dict[str, dict[str, Any]]:
    """Write the arrays through a scratch directory, each renamed into place; their manifest entries."""
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-align-", dir=directory))
    try:
        arrays = {}
        for name, array in (("align.pairs", links.pairs), ("align.offsets", links.offsets)):
            arrays[name] = _write_array(scratch / f"train.{name}", array)
        for name in ALIGN_ARRAYS:
            os.replace(scratch / f"train.{name}", directory / f"train.{name}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return arrays


def _write_array(path: Path, array: np.ndarray) -> dict[str, Any]:
    data = np.ascontiguousarray(array).data
    with path.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return {"dtype": array.dtype.str, "bytes": data.nbytes, "sha256": hashlib.sha256(data).hexdigest()}


def load_links(directory: Path, manifest: dict[str, Any], maps: list[mmap.mmap]) -> Links:
    """The alignments of the prepared corpus in `directory`, memory-mapped (each map appended to
    `maps`), once their sizes fit the manifest (`ensure_alignments` also compared their checksums)."""
    again = "run `s2s prepare CONFIG` again"
    section = manifest.get("alignments")
    if section is None or shape_problem(section, SHAPE, "alignments") is not None:
        raise DataError(f"the prepared corpus in {directory} has no word alignments: {again}")
    arrays = {}
    for name in ALIGN_ARRAYS:
        path, info = directory / f"train.{name}", section["arrays"][name]
        if not path.is_file() or path.stat().st_size != info["bytes"]:
            raise DataError(f"{path} is missing or truncated: {again}")
        arrays[name] = _mapped(path, np.dtype(info["dtype"]), maps)
    links = Links(arrays["align.pairs"].reshape(-1, 2), arrays["align.offsets"])
    ends = (int(links.offsets[0]), int(links.offsets[-1])) if len(links.offsets) else None
    if len(links) != manifest["pairs"] or ends != (0, len(links.pairs)):
        raise DataError(f"the alignments in {directory} do not fit its pairs: {again}")
    return links


def _mapped(path: Path, dtype: np.dtype, maps: list[mmap.mmap]) -> np.ndarray:
    if not path.stat().st_size:  # an empty file cannot be mapped
        return np.zeros(0, dtype)
    with path.open("rb") as f:
        maps.append(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    return np.frombuffer(maps[-1], dtype=dtype)
