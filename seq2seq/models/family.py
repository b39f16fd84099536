"""The model families as the rest of s2s meets them, and the one place that reads `model.arch`.

Each family is described once (`Family`): what it supports. The other wings ask the description
(`model_family`) instead of comparing `model.arch` again: which stacks of layers a shrunk start
renumbers, which control symbol its tokenizer must hold, whether it can be exported or join running
batches. A description holds no tensors, so that a command asks it without importing torch; how each
family is built is `seq2seq.models.build`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from seq2seq.config import ModelConfig
from seq2seq.special import CLS, CLS_PIECE, SEP, SEP_PIECE


@dataclass(frozen=True)
class Family:
    """A model family as the rest of s2s meets it."""

    name: str  # its `model.arch`
    layer_stacks: dict[str, str]  # state-dict prefix of each stack of layers (`PREFIX.N.`) -> its model key
    control: tuple[str, int] | None  # the control symbol (piece, id) its input needs, if any
    exports: bool  # CTranslate2's and Hugging Face's layouts hold it (the encoder-decoder's)
    joins_running_batches: bool  # continuous batching can join new sentences into its running search


FAMILIES = {
    family.name: family
    for family in (
        Family(
            "encoder_decoder",
            {"encoder.": "encoder_layers", "decoder.": "decoder_layers"},
            control=None,
            exports=True,
            joins_running_batches=True,
        ),
        Family(
            "decoder_only",
            {"layers.": "decoder_layers"},
            control=(SEP_PIECE, SEP),  # between source and target
            exports=False,
            joins_running_batches=False,
        ),
        Family(
            "encoder_only",
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


def export_refusal(cfg: ModelConfig) -> str | None:
    """Why CTranslate2's and Hugging Face's layouts cannot give this model's translations, or None:
    they hold encoder-decoders, and write every output left to right."""
    family = model_family(cfg)
    if not family.exports:
        return f"a {family.name} model; CTranslate2 and Hugging Face take encoder-decoder models only"
    if cfg.right_to_left:
        return (
            "a right-to-left model (model.right_to_left); CTranslate2 and Hugging Face would write its "
            "translations backwards: s2s's decoder puts them in reading order"
        )
    return None
