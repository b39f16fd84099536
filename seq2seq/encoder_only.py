"""The encoder-only reader: a bidirectional encoder with a classification or tagging head.

Its input is `<cls> source </s>` (the model puts the `<cls>` in front). `task: classify` predicts one
label per source from the `<cls>` state (`pooling: cls`) or the mean of the real tokens' states
(`pooling: mean`); `task: tag` predicts a tag on every source piece, of which the loss and the
output keep each word's first. Training meets it as it meets every family: `features(src, tgt_in)`
are the states the output projection reads, against targets `tgt_out` (`seq2seq.data` lays them out).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from seq2seq.config import ModelConfig
from seq2seq.decoding import Hypothesis
from seq2seq.layers import EncoderLayer, sinusoidal_positions
from seq2seq.model import Embedding, init_weights
from seq2seq.special import CLS, PAD


class EncoderOnlyTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> None:
        """`tgt_vocab` is the label set's size, PAD included (`seq2seq.labels.Labels.vocab_size`)."""
        super().__init__()
        self.cfg = cfg
        self.max_positions = cfg.max_positions - 1  # one is the <cls>
        d = cfg.d_model
        tokens = nn.Embedding(src_vocab, d, padding_idx=PAD)
        self.embed = Embedding(tokens, sinusoidal_positions(cfg.max_positions, d), cfg.dropout)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.encoder_layers))
        self.norm = nn.LayerNorm(d) if cfg.norm == "pre" else nn.Identity()
        self.output = nn.Linear(d, tgt_vocab, bias=False)
        init_weights(self, d)
        # which source pieces begin a word, where tags are read (`seq2seq.architectures.model_for`)
        self.register_buffer("word_start", torch.ones(src_vocab, dtype=torch.bool), persistent=False)

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
        states = self.encode(src)
        if self.cfg.task == "tag":
            return states[:, 1:]
        if self.cfg.pooling == "cls":
            return states[:, :1]
        real = torch.cat([torch.ones_like(src[:, :1]), src], dim=1).ne(PAD).unsqueeze(-1)  # (B, 1 + S, 1)
        return (states * real).sum(1, keepdim=True) / real.sum(1, keepdim=True)

    def forward(self, src: Tensor, tgt_in: Tensor | None = None) -> Tensor:
        """Label logits: (B, 1, L) for classify, (B, S, L) for tag; column PAD is never a label."""
        return self.output(self.features(src, tgt_in))

    def best_labels(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """(log-probability, id) of the most likely label at each output position, (B, 1) for
        classify or (B, S) for tag; PAD is never a label."""
        logp = self(src).float()
        logp[..., PAD] = float("-inf")
        return logp.log_softmax(-1).max(-1)

    @torch.no_grad()
    def read(self, src: Tensor) -> list[list[Hypothesis]]:
        """The best label (classify) or each word's best tag (tag) of every source, as one hypothesis.

        A hypothesis's tokens are label ids; its score is the model's probability of the label, or
        of the whole tag sequence (the product of the tags').
        """
        best, ids = self.best_labels(src)  # (B, T)
        if self.cfg.task == "classify":
            return [[Hypothesis([i], s)] for i, s in zip(ids[:, 0].tolist(), best[:, 0].exp().tolist())]
        keep = self.word_start[src] & (src != PAD)  # (B, S): each word's first piece
        scores = best.masked_fill(~keep, 0.0).sum(1).exp().tolist()
        return [[Hypothesis(row[mask].tolist(), score)] for row, mask, score in zip(ids, keep, scores)]
