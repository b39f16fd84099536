"""The model families behind one interface, and the one place that reads `model.arch`."""

from __future__ import annotations

import numpy as np

from seq2seq.config import ModelConfig
from seq2seq.models.decoder_only import DecoderOnlyTransformer
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.encoder_only import EncoderOnlyTransformer

Model = Seq2SeqTransformer | DecoderOnlyTransformer | EncoderOnlyTransformer


def build_model(
    cfg: ModelConfig, src_vocab: int, tgt_vocab: int, word_start: np.ndarray | None = None
) -> Model:
    """A new model of family `cfg.arch` for these vocabulary sizes.

    `word_start` (src_vocab,) bool says which source pieces begin a word (the source tokenizer's
    `word_starts()`); only a reader reads it, to put tags on each word's first piece.
    """
    if cfg.arch == "encoder_only":
        return EncoderOnlyTransformer(cfg, src_vocab, tgt_vocab, word_start)
    if cfg.arch == "decoder_only":
        return DecoderOnlyTransformer(cfg, src_vocab, tgt_vocab)
    return Seq2SeqTransformer(cfg, src_vocab, tgt_vocab)


def layer_stacks(arch: str) -> dict[str, str]:
    """Family `arch`'s stacks of layers: the state-dict prefix of each (its layers are `PREFIX.N.`)
    and the `model` key that counts them."""
    if arch == "encoder_only":
        return {"layers.": "encoder_layers"}
    if arch == "decoder_only":
        return {"layers.": "decoder_layers"}
    return {"encoder.": "encoder_layers", "decoder.": "decoder_layers"}
