"""The cross-attention of a run's model: its last decoder layer's weights, teacher-forced on a
hypothesis, as an `AttentionMap` (`seq2seq.translate.attention`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import torch

from seq2seq.models.decoder_only import DecoderOnlyTransformer
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.special import BOS, EOS
from seq2seq.translate.attention import AttentionMap

if TYPE_CHECKING:
    from seq2seq.translate.translator import Translator

M = TypeVar("M")  # what a model's `encode` gives its decoder to attend to


class Attending(Protocol[M]):
    """A model whose decoder attends to its encoded source and can hand out the weights: the
    encoder-decoder and the decoder-only families (a reader has no decoder)."""

    def encode(self, src: torch.Tensor) -> M: ...

    def decode(
        self, tgt: torch.Tensor, memory: M, *, attn_sink: list[torch.Tensor] | None = None
    ) -> torch.Tensor: ...


def attention_map(
    translator: Translator, source: str, hypothesis: str, prefix: Sequence[int]
) -> AttentionMap:
    """Cross-attention of the last decoder layer (mean over heads), teacher-forced on `hypothesis`; the
    source starts with the control ids `prefix` (a target language, a tag), as when translated."""
    model = translator.first_model  # a translation's, whose answers draw attention: it has a decoder
    assert isinstance(model, Seq2SeqTransformer | DecoderOnlyTransformer)
    src_tok, tgt_tok = translator.tokenizers.src, translator.tokenizers.tgt_tokenizer
    src_ids = [*prefix, *src_tok.encode([source])[0]][: translator.max_source_tokens]
    tgt_ids = tgt_tok.encode([hypothesis])[0][: model.max_positions - 1]
    src = torch.tensor([[*src_ids, EOS]], device=translator.device)  # (1, S)
    tgt_in = torch.tensor([[BOS, *tgt_ids]], device=translator.device)  # (1, T)
    weights = cross_attention(model, src, tgt_in)[0].float().cpu().numpy()  # (T, S)
    source_pieces = [*src_tok.id_pieces(prefix), *src_tok.pieces(source)][: len(src_ids)]
    pieces = source_pieces, tgt_tok.pieces(hypothesis)[: len(tgt_ids)]
    return AttentionMap([*pieces[0], "</s>"], [*pieces[1], "</s>"], weights)


@torch.no_grad()
def cross_attention(model: Attending[Any], src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    """Where the last decoder layer looks, averaged over heads: (B, T, S) for teacher-forced `tgt_in`.

    src (B, S) source ids ending in <eos>, right-padded with PAD; tgt_in (B, T) starting with <bos>.
    Row t is the attention while predicting target token t; each row sums to 1 over the real source
    tokens and gives padding none. Only this inspection path computes the weights explicitly.
    """
    sink: list[torch.Tensor] = []
    model.decode(tgt_in, model.encode(src), attn_sink=sink)
    return sink[-1]  # (B, T, S)
