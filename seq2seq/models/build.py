"""A new model of each family (`seq2seq.models.family` describes them), and a reader's head, chosen
from its task."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from seq2seq.config import ModelConfig, Task
from seq2seq.models.decoder_only import DecoderOnlyTransformer
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.encoder_only import EncoderOnlyTransformer, LabelHead, ReaderHead, TagHead
from seq2seq.models.family import model_family

Model = Seq2SeqTransformer | DecoderOnlyTransformer | EncoderOnlyTransformer
Builder = Callable[[ModelConfig, int, int, np.ndarray | None], Model]


def reader_head(cfg: ModelConfig) -> ReaderHead:
    """What an encoder-only reader of `cfg.task` reads its answers from."""
    heads: dict[Task, ReaderHead] = {Task.CLASSIFY: LabelHead(cfg.pooling), Task.TAG: TagHead()}
    return heads[cfg.task]


# by family: (config, source vocabulary, target vocabulary, word starts) -> a new model
BUILDERS: dict[str, Builder] = {
    "encoder_decoder": lambda cfg, src_vocab, tgt_vocab, word_start: Seq2SeqTransformer(
        cfg, src_vocab, tgt_vocab
    ),
    "decoder_only": lambda cfg, src_vocab, tgt_vocab, word_start: DecoderOnlyTransformer(
        cfg, src_vocab, tgt_vocab
    ),
    "encoder_only": lambda cfg, src_vocab, tgt_vocab, word_start: EncoderOnlyTransformer(
        cfg, src_vocab, tgt_vocab, reader_head(cfg), word_start
    ),
}


def build_model(
    cfg: ModelConfig, src_vocab: int, tgt_vocab: int, word_start: np.ndarray | None = None
) -> Model:
    """A new model of family `cfg.arch` for these vocabulary sizes.

    `word_start` (src_vocab,) bool says which source pieces begin a word (the source tokenizer's
    `word_starts()`); only a reader reads it, to put tags on each word's first piece.
    """
    return BUILDERS[model_family(cfg).name](cfg, src_vocab, tgt_vocab, word_start)
