"""A lexical shortlist for a CTranslate2 export: the target pieces a batch's sources make worth scoring.

Every decoding step scores the whole target vocabulary, and in a model with a small decoder (a
distilled student's one or two layers) the output projection and its softmax are much of the step.
With a vocabulary map in the export (`vmap.txt`) and `use_vmap`, CTranslate2 scores only the union
of the candidates of each batch's source pieces, the common pieces and the special ones, as
Marian's shortlists do for the Bergamot and Firefox students.

A source piece's candidates are the target pieces it co-occurs with most in the run's training
pairs (its prepared corpora: `seq2seq.ct2.conversion.run_shortlist`), by the Dice coefficient of the
pairs each occurs in (2 c(s, t) / (c(s) + c(t)), each piece counted once per pair), and the piece
itself where the target vocabulary has it (names and numbers are copied). The common pieces are the
target pieces found in the most pairs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from seq2seq.files import write_text

if TYPE_CHECKING:
    from seq2seq.data.parallel import ParallelData
    from seq2seq.data.token_arrays import TokenArrays

log = logging.getLogger(__name__)

VMAP_FILE = "vmap.txt"  # the name CTranslate2 reads a vocabulary map from, in the model directory
MAX_PAIRS = 2_000_000  # pairs counted at most: an even spread of a larger corpus
CHUNK = 100_000  # pairs counted at once


@dataclass
class Shortlist:
    """The target ids scored for a batch: `common` always, and `candidates[s]` where source id s is."""

    common: np.ndarray  # (N,) target ids, most frequent first
    candidates: dict[int, np.ndarray]  # source id -> target ids, the best first
    pairs: int  # the training pairs counted


def pair_sample(
    corpora: Sequence[ParallelData], most: int = MAX_PAIRS
) -> Iterable[tuple[TokenArrays, TokenArrays, np.ndarray]]:
    """(sources, targets, rows) of each corpus: all of its pairs, or an even spread of them when the
    corpora hold more than `most` together."""
    total = sum(len(c.src) for c in corpora)
    share = min(1.0, most / max(total, 1))
    for corpus in corpora:
        count = len(corpus.src)
        take = count if share == 1.0 else max(int(count * share), 1)
        yield (
            corpus.src,
            corpus.tgt,
            np.linspace(0, count - 1, take).astype(np.int64) if take < count else np.arange(count),
        )


def build_shortlist(
    corpora: Sequence[ParallelData],
    src_vocab: int,
    tgt_vocab: int,
    per_source: int,
    common: int,
    most_pairs: int = MAX_PAIRS,
) -> Shortlist:
    """The `per_source` best target pieces of each source piece and the `common` most frequent target
    pieces, counted over the pairs of `corpora` (at most `most_pairs` of them, evenly spread)."""
    src_count = np.zeros(src_vocab, np.int64)
    tgt_count = np.zeros(tgt_vocab, np.int64)
    keys, counts = np.zeros(0, np.int64), np.zeros(0, np.int64)
    pairs = 0
    for src, tgt, rows in pair_sample(corpora, most_pairs):
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            s_rows, s_ids = _distinct(src, chunk, src_vocab)
            t_rows, t_ids = _distinct(tgt, chunk, tgt_vocab)
            src_count += np.bincount(s_ids, minlength=src_vocab)
            tgt_count += np.bincount(t_ids, minlength=tgt_vocab)
            chunk_keys = _pair_keys(s_rows, s_ids, t_rows, t_ids, len(chunk), tgt_vocab)
            keys, counts = _merge(keys, counts, *np.unique(chunk_keys, return_counts=True))
            pairs += len(chunk)
    s, t = keys // tgt_vocab, keys % tgt_vocab
    dice = 2 * counts / (src_count[s] + tgt_count[t])
    order = np.lexsort((-dice, s))  # by source id, the best first within each
    s, t = s[order], t[order]
    # where each source id's run begins and ends; each keeps its first `per_source`
    bounds = np.flatnonzero(np.r_[True, s[1:] != s[:-1], True]) if len(s) else np.zeros(1, np.int64)
    runs = pairwise(bounds)
    candidates = {int(s[a]): t[a : min(b, a + per_source)] for a, b in runs} if per_source else {}
    frequent = np.argsort(-tgt_count, kind="stable")[:common]
    return Shortlist(frequent[tgt_count[frequent] > 0], candidates, pairs)


def _distinct(arrays: TokenArrays, rows: np.ndarray, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """(chunk row, id) of each distinct id of each of `rows`' sentences, sorted by row."""
    starts, ends = arrays.offsets[rows], arrays.offsets[rows + 1]
    lengths = ends - starts
    row = np.repeat(np.arange(len(rows)), lengths)
    at = np.repeat(starts - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(int(lengths.sum()))
    unique = np.unique(row * vocab + arrays.ids[at].astype(np.int64))
    return unique // vocab, unique % vocab


def _pair_keys(
    s_rows: np.ndarray, s_ids: np.ndarray, t_rows: np.ndarray, t_ids: np.ndarray, rows: int, tgt_vocab: int
) -> np.ndarray:
    """s * tgt_vocab + t for every source id s and target id t of the same row."""
    t_per_row = np.bincount(t_rows, minlength=rows)
    t_first = np.r_[0, np.cumsum(t_per_row)[:-1]]
    repeats = t_per_row[s_rows]  # each source id meets every target id of its row
    total = int(repeats.sum())
    within = np.arange(total) - np.repeat(np.r_[0, np.cumsum(repeats)[:-1]], repeats)
    targets = t_ids[np.repeat(t_first[s_rows], repeats) + within]
    return np.repeat(s_ids, repeats) * tgt_vocab + targets


def _merge(
    keys: np.ndarray, counts: np.ndarray, more: np.ndarray, more_counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The counts of two sorted (key, count) sets added up."""
    joined, where = np.unique(np.concatenate([keys, more]), return_inverse=True)
    return joined, np.bincount(where, weights=np.concatenate([counts, more_counts])).astype(np.int64)


def write_vmap(
    path: Path, shortlist: Shortlist, src_pieces: Sequence[str], tgt_pieces: Sequence[str]
) -> None:
    """The shortlist as CTranslate2's vocabulary map: a line of the common pieces (an empty key), then
    `source piece<TAB>candidate candidate ...`, each source piece's candidates followed by itself when
    the target vocabulary has it. Pieces holding whitespace cannot be written and are left out."""
    target_ids = {piece: i for i, piece in enumerate(tgt_pieces)}
    writable = [not any(c.isspace() for c in piece) for piece in tgt_pieces]
    lines = ["\t" + " ".join(tgt_pieces[i] for i in shortlist.common if writable[i])]
    for s, best in sorted(shortlist.candidates.items()):
        piece = src_pieces[s]
        if any(c.isspace() for c in piece):
            continue
        chosen = [tgt_pieces[t] for t in best if writable[t]]
        if piece in target_ids and piece not in chosen:
            chosen.append(piece)
        lines.append(f"{piece}\t{' '.join(chosen)}")
    write_text(path, "\n".join(lines) + "\n")
    log.info("wrote a shortlist of %d source pieces to %s", len(lines) - 1, path)


@dataclass(frozen=True)
class ShortlistSize:
    """`s2s export --shortlist`: candidates per source piece, and the most frequent target pieces."""

    per_source: int = 50
    common: int = 100
