"""The bridge between words and SentencePiece pieces: word links to piece targets, attention to word links.

The pieces are those of a line the tokenizer encoded from its whitespace-separated words. The model's
source is `shift` control tokens, the pieces, then </s>; its attention row `t` is the decoder step
that predicts target piece `t`, and the row after the last piece predicts </s>.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from seq2seq.align import Pair

WORD_START = "\u2581"  # "▁", SentencePiece's mark of a piece that follows a space


def word_of_piece(pieces: Sequence[str]) -> list[int]:
    """The word index of each piece: a piece that starts with "▁" and carries letters starts a word.

    A lone "▁" starts the word of the piece after it when that piece has no "▁" (the tokenizer split
    the word's mark from its letters); otherwise it carries no letters and stays with the word before
    (or the first word). Pieces before any "▁" (a tokenizer without the leading space) are word 0.
    """
    words, word = [], -1
    for n, piece in enumerate(pieces):
        if piece == WORD_START:
            following = pieces[n + 1] if n + 1 < len(pieces) else WORD_START
            starts = not following.startswith(WORD_START)
        else:
            starts = piece.startswith(WORD_START) or word < 0
        word += starts
        words.append(max(word, 0))
    return words


def _pieces_of_words(word_of: Sequence[int], shift: int) -> dict[int, list[int]]:
    """Word -> its piece positions in the model's sequence (after `shift` leading tokens)."""
    positions: dict[int, list[int]] = {}
    for position, word in enumerate(word_of, shift):
        positions.setdefault(word, []).append(position)
    return positions


def aligned_source_pieces(
    pairs: Iterable[Pair], src_word_of: Sequence[int], tgt_word_of: Sequence[int], shift: int = 0
) -> list[list[int]]:
    """For each target piece, the sorted source positions it is aligned to (control tokens counted).

    A target piece is aligned to every piece of every source word its word is linked to; a word
    with no pieces (the tokenizer dropped it) contributes nothing.
    """
    src_pieces = _pieces_of_words(src_word_of, shift)
    linked: dict[int, set[int]] = {}
    for i, j in pairs:
        linked.setdefault(j, set()).update(src_pieces.get(i, ()))
    return [sorted(linked.get(word, ())) for word in tgt_word_of]


def alignment_matrix(
    pairs: Iterable[Pair],
    src_word_of: Sequence[int],
    tgt_word_of: Sequence[int],
    shift: int = 0,
    shape: tuple[int, int] | None = None,
) -> np.ndarray:
    """The training target of an attention head: each target piece's row spread evenly over its sources.

    Returns (T, S) float32, by default T = target pieces and S = shift + source pieces; a larger
    `shape` (the </s> row and column, padding) leaves what lies beyond them zero. A row whose
    piece has no link is all zero, so a loss can skip it.
    """
    rows = aligned_source_pieces(pairs, src_word_of, tgt_word_of, shift)
    least = (len(tgt_word_of), shift + len(src_word_of))
    shape = shape or least
    assert shape[0] >= least[0] and shape[1] >= least[1], f"shape {shape} is smaller than {least}"
    matrix = np.zeros(shape, dtype=np.float32)  # (T, S)
    for t, sources in enumerate(rows):
        if sources:
            matrix[t, sources] = 1.0 / len(sources)
    return matrix


def attention_to_pairs(
    attention: np.ndarray, src_word_of: Sequence[int], tgt_word_of: Sequence[int], shift: int = 0
) -> list[Pair]:
    """The word links an attention matrix over pieces shows: each target word to one source word.

    `attention` is (T, S) with T >= target pieces and S >= shift + source pieces: rows past the
    target's pieces (</s>) and the control and </s> columns are ignored. A target word's pieces' rows
    are summed (a mean would pick the same), the source columns summed by word (a word's share of
    the attention), and the word with the most taken (the first on a tie). Every target word with
    any attention on the source words gets a link, even one whose mass lies mostly on </s>: the
    training target of the head has no "no link" column (an unlinked piece's row is all zero and
    skipped), so the head is never taught to say "no link" there, and that mass is not evidence of it.
    """
    n_tgt, n_src = len(tgt_word_of), len(src_word_of)
    assert attention.ndim == 2, f"attention must be (T, S), not {attention.shape}"
    assert attention.shape[0] >= n_tgt and attention.shape[1] >= shift + n_src, (
        f"attention {attention.shape} is smaller than ({n_tgt}, {shift + n_src})"
    )
    if n_tgt == 0 or n_src == 0:
        return []
    pieces = np.asarray(attention[:n_tgt, shift : shift + n_src], dtype=np.float64)  # (T, S)
    tgt_words = np.zeros((max(tgt_word_of) + 1, n_tgt))  # (Wt, T): 1 where piece t is of word w
    tgt_words[np.asarray(tgt_word_of), np.arange(n_tgt)] = 1.0
    src_words = np.zeros((n_src, max(src_word_of) + 1))  # (S, Ws)
    src_words[np.arange(n_src), np.asarray(src_word_of)] = 1.0
    by_words = tgt_words @ pieces @ src_words  # (Wt, Ws)
    return [(int(by_words[j].argmax()), j) for j in range(len(by_words)) if by_words[j].any()]
