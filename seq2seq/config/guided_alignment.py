"""The `train.guided_alignment` block: one cross-attention head taught to follow word alignments."""

from __future__ import annotations

from dataclasses import dataclass

from seq2seq.config.rules import broken

MAX_WEIGHT = 100.0  # far past any published setting (Marian's default is 0.1): a typo, not a choice


@dataclass(frozen=True)
class GuidedAlignmentConfig:
    """Guided alignment (Marian's guided-alignment cost, 'ce'): head 0 of one decoder layer's
    cross-attention is trained towards each pair's word alignment, which `s2s prepare` computes with
    eflomal for every training corpus (docs/alignments.md).

    Always head 0: CTranslate2 averages the first `alignment_heads` heads of its alignment layer, so an
    export that sets alignment_heads to 1 gives back exactly the head that was trained, and the other
    heads stay free to attend where translation needs them.
    """

    # 0 - 100: the weight of the alignment cost beside the token loss (0 = off; Marian's default is
    # 0.1). On, each training corpus is word-aligned when it is prepared, by eflomal, an optional extra:
    # pip install --no-cache-dir "s2s[align]"
    weight: float = 0.0
    # which decoder layer's cross-attention is guided, counted from 0; -1 is the last, -2 the one before
    layer: int = -1

    @property
    def active(self) -> bool:
        """Whether training guides a head (and the prepared corpora carry alignments)."""
        return self.weight > 0

    def layer_index(self, decoder_layers: int) -> int:
        """The guided layer counted from 0, for a decoder of `decoder_layers` layers."""
        return self.layer % decoder_layers

    def problems(self, *, arch: str, decoder_layers: int, right_to_left: bool = False) -> list[str]:
        """`arch`, `decoder_layers` and `right_to_left` are model.arch, .decoder_layers, .right_to_left."""
        where = "train.guided_alignment"
        return broken(
            [
                (
                    not 0 <= self.weight <= MAX_WEIGHT,
                    f"{where}.weight: must be in [0, {MAX_WEIGHT:g}] (0 = off; Marian's default is 0.1)",
                ),
                (
                    decoder_layers >= 1 and not -decoder_layers <= self.layer < decoder_layers,
                    f"{where}.layer: must be in [{-decoder_layers}, {decoder_layers - 1}] "
                    f"(model.decoder_layers is {decoder_layers}; -1 is the last layer)",
                ),
                (
                    self.active and arch != "encoder_decoder",
                    f"{where}.weight: guided alignment trains the cross-attention of an encoder_decoder "
                    f"model; model.arch {arch} has none (set weight: 0)",
                ),
                (
                    self.active and right_to_left,
                    f"{where}.weight: the alignments link words in reading order, and model.right_to_left "
                    "writes targets last first (set weight: 0)",
                ),
            ]
        )
