"""The model families behind one interface, and the one place that reads `model.arch`."""

from __future__ import annotations

import torch

from seq2seq.config import ModelConfig
from seq2seq.decoder_only import DecoderOnlyTransformer
from seq2seq.encoder_only import EncoderOnlyTransformer
from seq2seq.model import Seq2SeqTransformer
from seq2seq.tokenizer import TokenizerPair

Model = Seq2SeqTransformer | DecoderOnlyTransformer | EncoderOnlyTransformer

ARCHITECTURES: dict[str, type[Model]] = {
    "encoder_decoder": Seq2SeqTransformer,
    "decoder_only": DecoderOnlyTransformer,
    "encoder_only": EncoderOnlyTransformer,
}


def build_model(cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> Model:
    return ARCHITECTURES[cfg.arch](cfg, src_vocab, tgt_vocab)


def model_for(cfg: ModelConfig, tokenizers: TokenizerPair) -> Model:
    """`build_model` for these tokenizers; a reader also learns which source pieces begin a word."""
    model = build_model(cfg, tokenizers.src.vocab_size, tokenizers.tgt.vocab_size)
    if isinstance(model, EncoderOnlyTransformer):
        model.word_start.copy_(torch.tensor(tokenizers.src.word_starts()))
    return model
