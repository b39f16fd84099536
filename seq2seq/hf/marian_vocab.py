"""A MarianMT vocabulary as s2s's tokenizers: SentencePiece models whose ids are s2s's, and the
MarianMT row that each of their ids reads.

MarianMT tokenizes each side with its own SentencePiece model (`source.spm`, `target.spm`) but
numbers pieces by one more table, `vocab.json` (a piece missing there is `<unk>`), with `</s>` = 0,
`<unk>` = 1 and `<pad>` last; its decoder starts from `<pad>`. s2s uses SentencePiece's ids directly,
with the fixed specials of `seq2seq.special`. So each side's model is rewritten, not retrained:

- the specials move to s2s's ids (`<pad>` 0, `<unk>` 1, `<s>` 2, `</s>` 3), every other piece keeps
  its score and its order after them, so the model segments text exactly as before;
- the target model gets, after its own pieces, every other entry of the vocabulary as an *unused*
  piece: SentencePiece never produces one from text, but decodes it, so the decoder may still write
  every piece MarianMT can (a joint vocabulary holds the source language's pieces too);
- a multilingual model's source model gets its target-language tokens (`>>fra<<`) as user-defined
  pieces, each with the word-start mark SentencePiece gives a line's first piece, so `>>fra<< text`
  reads as MarianMT's tokenizer reads it: the token's id, then the text's pieces;
- `rows[i]` is the MarianMT row s2s's id i reads: the embedding, output and bias rows are taken in
  that order (`seq2seq.hf.marian_weights`). `<s>` reads `<pad>`'s row, MarianMT's start token.

On the target side a row read by two ids (`<s>` and `<pad>`; a piece missing from the vocabulary and
`<unk>`) is marked `doubled`: its later id gets a logit bias of -1e4, so it is never written and
the softmax counts that row once, as MarianMT's does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sentencepiece import sentencepiece_model_pb2

from seq2seq.errors import Seq2SeqError
from seq2seq.special import BOS, EOS, PAD, UNK

pb: Any = sentencepiece_model_pb2  # generated protobuf classes: no types to check
Piece = pb.ModelProto.SentencePiece


class MarianImportError(Seq2SeqError):
    """A directory that is not a MarianMT model s2s can read."""


@dataclass(frozen=True)
class MarianSpecials:
    """The names of MarianMT's special pieces (its tokenizer's, MarianTokenizer's defaults)."""

    eos: str = "</s>"
    unk: str = "<unk>"
    pad: str = "<pad>"


@dataclass(frozen=True)
class SideVocab:
    """One side's rewritten SentencePiece model and the MarianMT row of each of its ids."""

    model: bytes  # a serialized SentencePiece ModelProto, specials at s2s's ids
    rows: list[int]  # (V,) the MarianMT row s2s's id i reads
    doubled: list[bool]  # (V,) whether an earlier id already reads that row


def side_vocab(
    spm_model: bytes, vocab: dict[str, int], specials: MarianSpecials, extra: bool, name: str
) -> SideVocab:
    """Rewrite `spm_model` (`name` in errors) for s2s and map its ids to `vocab`'s rows; with `extra`
    (the target side), every entry of `vocab` the model lacks is added as an unused piece."""
    for piece in (specials.eos, specials.unk, specials.pad):
        if piece not in vocab:
            raise MarianImportError(f"{name}: the vocabulary has no {piece} (MarianMT's special pieces)")
    proto = pb.ModelProto()
    try:
        proto.ParseFromString(spm_model)
    except Exception:  # noqa: BLE001 - any protobuf failure: not a SentencePiece model
        raise MarianImportError(f"{name} is not a SentencePiece model") from None
    own = [p for p in proto.pieces if p.type not in (Piece.CONTROL, Piece.UNKNOWN)]
    # the source side of a multilingual model: `>>fra<<` at a line's start, one piece (with the
    # word-start mark SentencePiece gives a line's first piece), as MarianMT's tokenizer splits it off
    codes = {} if extra else {f"\u2581{code}": code for code in language_codes(vocab)}
    names = {p.piece for p in own}
    added = sorted(
        (i, piece)
        for piece, i in vocab.items()
        if extra and piece not in names and piece not in (specials.eos, specials.unk, specials.pad)
    )
    pieces = [
        _piece(specials.pad, 0.0, Piece.CONTROL),
        _piece(specials.unk, 0.0, Piece.UNKNOWN),
        _piece("<s>", 0.0, Piece.CONTROL),
        _piece(specials.eos, 0.0, Piece.CONTROL),
        *own,
        *(_piece(piece, 0.0, Piece.UNUSED) for _, piece in added),
        *(_piece(piece, 0.0, Piece.USER_DEFINED) for piece in codes),
    ]
    del proto.pieces[:]
    proto.pieces.extend(pieces)
    spec = proto.trainer_spec
    spec.pad_id, spec.unk_id, spec.bos_id, spec.eos_id = PAD, UNK, BOS, EOS
    spec.pad_piece, spec.unk_piece, spec.bos_piece, spec.eos_piece = (
        specials.pad,
        specials.unk,
        "<s>",
        specials.eos,
    )
    spec.vocab_size = len(pieces)
    rows = [vocab.get(codes.get(p.piece, p.piece), vocab[specials.unk]) for p in pieces]
    rows[BOS] = vocab[specials.pad]  # MarianMT's decoder starts from <pad>
    seen: set[int] = set()
    doubled = []
    for row in rows:
        doubled.append(row in seen)
        seen.add(row)
    return SideVocab(proto.SerializeToString(), rows, doubled)


def language_codes(vocab: dict[str, int]) -> list[str]:
    """A multilingual model's target-language tokens (`>>fra<<`), which start its sources."""
    return [piece for piece in vocab if piece.startswith(">>") and piece.endswith("<<")]


def _piece(text: str, score: float, kind: int) -> Any:
    piece = Piece()
    piece.piece, piece.score, piece.type = text, score, kind
    return piece


def model_type(spm_model: bytes) -> Literal["bpe", "unigram"]:
    """The SentencePiece model's type as `tokenizer.type` names it (unigram or bpe)."""
    proto = pb.ModelProto()
    proto.ParseFromString(spm_model)
    return "bpe" if proto.trainer_spec.model_type == pb.TrainerSpec.BPE else "unigram"
