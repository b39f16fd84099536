"""The encoder-only reader: a bidirectional encoder with a classification or tagging head.

Its input is `<cls> source </s>` (the model puts the `<cls>` in front). Its head, chosen for its task
when it is built (`seq2seq.models.build`), says what it reads its answers from: `task: classify`
predicts one label per source from the `<cls>` state (`pooling: cls`) or the mean of the real tokens'
states (`pooling: mean`) (`LabelHead`); `task: tag` predicts a tag on every source piece, of which the
loss and the output keep each word's first (`TagHead`). Training meets it as it meets every family:
`features(src, tgt_in)` are the states the output projection reads, against targets `tgt_out`
(`seq2seq.data.parallel` lays them out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch import Tensor, nn

from seq2seq.config import ModelConfig
from seq2seq.models.encoder_decoder import Embedding, init_weights
from seq2seq.models.layers import EncoderLayer, sinusoidal_positions
from seq2seq.special import CLS, PAD


class ReaderHead(Protocol):
    """Where a reader's answers come from: the states its output projection reads, and which of its
    output positions are answers."""

    def states(self, states: Tensor, src: Tensor) -> Tensor:
        """(B, 1 + S, D) states of `<cls> src` -> (B, T, D), one row per output position."""
        ...

    def answered(self, src: Tensor, word_start: Tensor) -> Tensor:
        """(B, T) bool: True where an output position's label is an answer."""
        ...


@dataclass(frozen=True)
class LabelHead:
    """One label per source, from the `<cls>` state (`pooling: cls`) or the mean of the real tokens'."""

    pooling: str

    def states(self, states: Tensor, src: Tensor) -> Tensor:
        if self.pooling == "cls":
            return states[:, :1]  # (B, 1, D)
        real = torch.cat([torch.ones_like(src[:, :1]), src], dim=1).ne(PAD).unsqueeze(-1)  # (B, 1 + S, 1)
        return (states * real).sum(1, keepdim=True) / real.sum(1, keepdim=True)

    def answered(self, src: Tensor, word_start: Tensor) -> Tensor:
        return torch.ones_like(src[:, :1], dtype=torch.bool)  # (B, 1): the one label


@dataclass(frozen=True)
class TagHead:
    """One tag per source piece; the answers are those on each word's first piece."""

    def states(self, states: Tensor, src: Tensor) -> Tensor:
        return states[:, 1:]  # (B, S, D)

    def answered(self, src: Tensor, word_start: Tensor) -> Tensor:
        return word_start[src] & (src != PAD)  # (B, S)


class EncoderOnlyTransformer(nn.Module):
    word_start: Tensor  # (src_vocab,) bool: a buffer

    def __init__(
        self,
        cfg: ModelConfig,
        src_vocab: int,
        tgt_vocab: int,
        head: ReaderHead,
        word_start: np.ndarray | None = None,
    ) -> None:
        """`tgt_vocab` is the label set's size, PAD included (`seq2seq.data.labels.Labels.vocab_size`);
        `head` reads the answers of its task; `word_start` (src_vocab,) bool marks the pieces that
        begin a word (default: every piece)."""
        super().__init__()
        self.cfg, self.head = cfg, head
        self.max_positions = cfg.max_positions - 1  # one is the <cls>
        d = cfg.d_model
        tokens = nn.Embedding(src_vocab, d, padding_idx=PAD)
        self.embed = Embedding(tokens, sinusoidal_positions(cfg.max_positions, d, cfg.positions), cfg.dropout)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.encoder_layers))
        self.norm = nn.LayerNorm(d) if cfg.norm == "pre" else nn.Identity()
        self.output = nn.Linear(d, tgt_vocab, bias=False)
        init_weights(self, d)
        # which source pieces begin a word, where tags are read (`seq2seq.decoding.reading`)
        starts = torch.ones(src_vocab, dtype=torch.bool) if word_start is None else torch.tensor(word_start)
        self.register_buffer("word_start", starts, persistent=False)

    def encode(self, src: Tensor) -> Tensor:
        """src (B, S) ids ending in <eos>, right-padded -> states (B, 1 + S, D) of `<cls> src`."""
        ids = torch.cat([torch.full_like(src[:, :1], CLS), src], dim=1)
        mask = (ids != PAD)[:, None, None, :]  # (B, 1, 1, 1 + S)
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)

    def features(self, src: Tensor, tgt_in: Tensor | None = None) -> Tensor:
        """What the output projection reads: (B, 1, D) for classify, (B, S, D) per source piece for tag.

        `tgt_in` is not read (a reader writes nothing); it keeps the training interface of the
        other families.
        """
        return self.head.states(self.encode(src), src)

    def forward(self, src: Tensor, tgt_in: Tensor | None = None) -> Tensor:
        """Label logits: (B, 1, L) for classify, (B, S, L) for tag; column PAD is never a label."""
        return self.output(self.features(src, tgt_in))

    def best_labels(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """(log-probability, id) of the most likely label at each output position, (B, 1) for
        classify or (B, S) for tag; PAD is never a label."""
        logp = self(src).float()
        logp[..., PAD] = float("-inf")
        return logp.log_softmax(-1).max(-1)

    def answered(self, src: Tensor) -> Tensor:
        """(B, 1) for classify or (B, S) for tag, bool: True at the positions of `best_labels` that
        are answers (the label; each word's first piece's tag)."""
        return self.head.answered(src, self.word_start)
