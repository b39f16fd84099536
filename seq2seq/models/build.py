"""The model families behind one interface, and the one place that reads `model.arch`.

Each family is described once (`Family`): how it is built and what it supports. The other wings
ask the description (`model_family`) instead of comparing `model.arch` again: which stacks of
layers a shrunk start renumbers, which control symbol its tokenizer must hold, whether it can be
exported or join running batches. A reader's head is chosen here too, from its task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from seq2seq.config import ModelConfig, Task
from seq2seq.models.decoder_only import DecoderOnlyTransformer
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.encoder_only import EncoderOnlyTransformer, LabelHead, ReaderHead, TagHead
from seq2seq.special import CLS, CLS_PIECE, SEP, SEP_PIECE

Model = Seq2SeqTransformer | DecoderOnlyTransformer | EncoderOnlyTransformer
Builder = Callable[[ModelConfig, int, int, np.ndarray | None], Model]


@dataclass(frozen=True)
class Family:
    """A model family as the rest of s2s meets it."""

    name: str  # its `model.arch`
    build: Builder  # (config, source vocabulary, target vocabulary, word starts) -> a new model
    layer_stacks: dict[str, str]  # state-dict prefix of each stack of layers (`PREFIX.N.`) -> its model key
    control: tuple[str, int] | None  # the control symbol (piece, id) its input needs, if any
    exports: bool  # CTranslate2's and Hugging Face's layouts hold it (the encoder-decoder's)
    joins_running_batches: bool  # continuous batching can join new sentences into its running search


def reader_head(cfg: ModelConfig) -> ReaderHead:
    """What an encoder-only reader of `cfg.task` reads its answers from."""
    heads: dict[Task, ReaderHead] = {Task.CLASSIFY: LabelHead(cfg.pooling), Task.TAG: TagHead()}
    return heads[cfg.task]


FAMILIES = {
    family.name: family
    for family in (
        Family(
            "encoder_decoder",
            lambda cfg, src_vocab, tgt_vocab, word_start: Seq2SeqTransformer(cfg, src_vocab, tgt_vocab),
            {"encoder.": "encoder_layers", "decoder.": "decoder_layers"},
            control=None,
            exports=True,
            joins_running_batches=True,
        ),
        Family(
            "decoder_only",
            lambda cfg, src_vocab, tgt_vocab, word_start: DecoderOnlyTransformer(cfg, src_vocab, tgt_vocab),
            {"layers.": "decoder_layers"},
            control=(SEP_PIECE, SEP),  # between source and target
            exports=False,
            joins_running_batches=False,
        ),
        Family(
            "encoder_only",
            lambda cfg, src_vocab, tgt_vocab, word_start: EncoderOnlyTransformer(
                cfg, src_vocab, tgt_vocab, reader_head(cfg), word_start
            ),
            {"layers.": "encoder_layers"},
            control=(CLS_PIECE, CLS),  # put in front of every source
            exports=False,
            joins_running_batches=False,
        ),
    )
}


def model_family(cfg: ModelConfig) -> Family:
    """The family `cfg.arch` names."""
    return FAMILIES[cfg.arch]


def build_model(
    cfg: ModelConfig, src_vocab: int, tgt_vocab: int, word_start: np.ndarray | None = None
) -> Model:
    """A new model of family `cfg.arch` for these vocabulary sizes.

    `word_start` (src_vocab,) bool says which source pieces begin a word (the source tokenizer's
    `word_starts()`); only a reader reads it, to put tags on each word's first piece.
    """
    return model_family(cfg).build(cfg, src_vocab, tgt_vocab, word_start)
