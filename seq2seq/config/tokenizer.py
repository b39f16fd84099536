"""The `tokenizer` section: the SentencePiece model(s) trained on the training corpus."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from seq2seq.config.bounds import MAX_VOCAB
from seq2seq.config.rules import broken

CONTROL_TOKEN = re.compile(r"<[^\s<>]+>")
RESERVED = ("<pad>", "<unk>", "<s>", "</s>", "<sep>", "<cls>")  # SentencePiece's and `seq2seq.special`'s


@dataclass(frozen=True)
class TokenizerConfig:
    """SentencePiece model trained on the training corpus and stored in the run directory."""

    type: Literal["bpe", "unigram"] = "bpe"  # SentencePiece's model type
    vocab_size: int = 8000  # 8 - 1,000,000: pieces in the vocabulary (a soft limit on tiny corpora)
    joint: bool = True  # one vocabulary for source and target; false trains one per side
    character_coverage: float = 1.0  # 0.98 - 1: SentencePiece's character coverage
    split_digits: bool = False  # split numbers into single digits
    # characters outside the vocabulary become UTF-8 byte pieces instead of <unk> (needs vocab_size
    # > 260); without it, the <unk> shares of training and validation text are logged
    byte_fallback: bool = False
    # >= 1: lines sampled (seeded) to train the tokenizer, in proportion to each corpus's size x weight
    max_sentences: int = 2_000_000
    # reserved pieces (corpus tags such as <bt>, language tokens): single ids, never made from text;
    # declared before the tokenizer is trained, so a later run with the same tokenizer can use them
    control_tokens: tuple[str, ...] = ()

    def problems(self) -> list[str]:
        """Every broken rule of this section; the ranges are SentencePiece's, refused here, before a run."""
        return broken(
            [
                (
                    not 8 <= self.vocab_size <= MAX_VOCAB,
                    f"tokenizer.vocab_size: must be in [8, {MAX_VOCAB}] (SentencePiece's range)",
                ),
                (
                    self.byte_fallback and self.vocab_size <= 260,
                    "tokenizer.vocab_size: byte_fallback needs more than 260 (256 byte pieces, "
                    "4 special ids, and the corpus' characters)",
                ),
                (
                    not 0.98 <= self.character_coverage <= 1,
                    "tokenizer.character_coverage: must be in [0.98, 1] (SentencePiece's range)",
                ),
                (self.max_sentences < 1, "tokenizer.max_sentences: must be >= 1"),
                *(
                    (
                        not CONTROL_TOKEN.fullmatch(token) or token in RESERVED,
                        f"tokenizer.control_tokens: {token!r} must look like <name> (no spaces) and not "
                        f"be one of s2s's own ({', '.join(RESERVED)})",
                    )
                    for token in self.control_tokens
                ),
                (
                    len(set(self.control_tokens)) != len(self.control_tokens),
                    "tokenizer.control_tokens: a token is listed twice",
                ),
            ]
        )
