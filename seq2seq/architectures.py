"""The model families behind one interface, and the one place that reads `model.arch`."""

from __future__ import annotations

from seq2seq.config import ModelConfig
from seq2seq.decoder_only import DecoderOnlyTransformer
from seq2seq.model import Seq2SeqTransformer

Model = Seq2SeqTransformer | DecoderOnlyTransformer

ARCHITECTURES: dict[str, type[Model]] = {
    "encoder_decoder": Seq2SeqTransformer,
    "decoder_only": DecoderOnlyTransformer,
}


def build_model(cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> Model:
    return ARCHITECTURES[cfg.arch](cfg, src_vocab, tgt_vocab)
