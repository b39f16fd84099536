"""The `model` section: the Transformer family, its task, sizes and regularization.

The family's rules (decoder-only, reader) need a few facts from other sections; `problems` takes
them as values, so each rule still sits beside the fields it guards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from seq2seq.config.bounds import MAX_LAYERS, MAX_PARAMETERS, MAX_POSITIONS
from seq2seq.config.rules import Rule, broken
from seq2seq.config.task import Task


@dataclass(frozen=True)
class ModelConfig:
    """Transformer family, sizes and regularization."""

    # the family: the Transformer of "Attention Is All You Need", a decoder-only translator (one causal
    # stack reads `source <sep>` and writes the target), or a bidirectional reader with a label head
    arch: Literal["encoder_decoder", "decoder_only", "encoder_only"] = "encoder_decoder"
    task: Task = Task.TRANSLATE  # translate (encoder_decoder, decoder_only); classify or tag (encoder_only)
    prefix_lm: bool = False  # decoder_only: source positions see the whole source (not only the past)
    pooling: Literal["cls", "mean"] = "cls"  # classify: read the <cls> state, or the mean of the tokens
    d_model: int = 256  # model width: even, divisible by heads, d_model / heads even
    heads: int = 4  # >= 1: attention heads
    ffn_dim: int = 1024  # >= 1: feed-forward inner size
    encoder_layers: int = 3  # >= 1: encoder layers (a decoder_only model has none)
    decoder_layers: int = 3  # >= 1: decoder layers (decoder_only: the whole stack; encoder_only: none)
    dropout: float = 0.1  # 0 <= p < 1: residual and embedding dropout
    attention_dropout: float = 0.0  # 0 <= p < 1: dropout on attention weights
    activation_dropout: float = 0.0  # 0 <= p < 1: dropout after the feed-forward activation
    # the feed-forward activation: relu (the original paper's), swish (SiLU: most OPUS-MT models'), gelu
    activation: Literal["relu", "swish", "gelu"] = "relu"
    # pre: LayerNorm before each sublayer, plus a final one; post: after, as in the original paper
    norm: Literal["pre", "post"] = "pre"
    # longest sequence (sinusoidal positions): data.max_len + 2 to 65,536; decoder_only holds source and
    # target in one sequence, so at least 2 x (data.max_len + 2), half for each
    max_positions: int = 1024
    # the sinusoidal position table's columns: interleaved (sin, cos, sin, cos, ...: the original
    # paper's) or concatenated (every sine, then every cosine: MarianMT's), at the same frequencies
    positions: Literal["interleaved", "concatenated"] = "interleaved"
    # encoder_decoder: a learned bias per target piece added to the output logits (MarianMT's
    # final_logits_bias); false: the output projection has none
    logits_bias: bool = False
    share_all_embeddings: bool = True  # source = target embedding = output (needs a joint vocabulary)
    tie_output: bool = True  # target embedding = output projection
    # encoder_decoder: the decoder writes each target from its last piece to its first; such a run
    # reranks a left-to-right run's beam (`s2s translate RUN --rerank THIS_RUN`) and translates with
    # s2s's decoder, its output put back in reading order
    right_to_left: bool = False

    def problems(self, *, max_len: int, joint_vocab: bool, best_metric: str, vocab_size: int) -> list[str]:
        """Every broken rule of this section.

        `max_len` is data.max_len, `joint_vocab` tokenizer.joint, `best_metric` train.best_metric,
        `vocab_size` tokenizer.vocab_size.
        """
        return broken(
            [
                (
                    self.d_model % max(self.heads, 1) != 0 or self.heads < 1,
                    f"model.d_model: {self.d_model} is not divisible by model.heads={self.heads}",
                ),
                (
                    (self.d_model // max(self.heads, 1)) % 2 != 0,
                    "model.d_model: d_model / heads must be even",
                ),
                (self.d_model % 2 != 0, "model.d_model: must be even (sinusoidal positions)"),
                *self._size_rules(vocab_size),
                *self._decoder_only_rules(max_len, joint_vocab),
                *self._task_rules(joint_vocab, best_metric),
                (
                    self.logits_bias and self.arch != "encoder_decoder",
                    f"model.logits_bias: only for model.arch: encoder_decoder (not {self.arch})",
                ),
                (
                    self.right_to_left and self.arch != "encoder_decoder",
                    f"model.right_to_left: only for model.arch: encoder_decoder (not {self.arch})",
                ),
                (self.max_positions < max_len + 2, "model.max_positions: must be >= data.max_len + 2"),
                (
                    self.max_positions > MAX_POSITIONS,
                    f"model.max_positions: must be <= {MAX_POSITIONS}",
                ),
                (
                    self.share_all_embeddings and not joint_vocab,
                    "model.share_all_embeddings: needs tokenizer.joint: true "
                    "(separate vocabularies cannot share)",
                ),
                *[
                    (not 0 <= p < 1, f"model.{name}: must be in [0, 1)")
                    for name, p in [
                        ("dropout", self.dropout),
                        ("attention_dropout", self.attention_dropout),
                        ("activation_dropout", self.activation_dropout),
                    ]
                ],
            ]
        )

    def _size_rules(self, vocab_size: int) -> list[Rule]:
        """Sizes that a machine can hold: the layers counted, the weights estimated."""
        rules = [
            (not 1 <= layers <= MAX_LAYERS, f"model.{key}: must be in [1, {MAX_LAYERS}]")
            for key, layers in (
                ("encoder_layers", self.encoder_layers),
                ("decoder_layers", self.decoder_layers),
            )
        ]
        rules += [
            (self.d_model < 2, "model.d_model: must be >= 2"),
            (self.ffn_dim < 1, "model.ffn_dim: must be >= 1"),
        ]
        if not any(is_broken for is_broken, _ in rules):
            weights = self.parameters(vocab_size)
            rules.append(
                (
                    weights > MAX_PARAMETERS,
                    f"model.d_model: with model.ffn_dim, the layers and the vocabulary, about {weights:.2g} "
                    f"weights; at most {MAX_PARAMETERS:.0e} (16 bytes each to train: weights, gradients, "
                    "AdamW's moments)",
                )
            )
        return rules

    def parameters(self, vocab_size: int) -> int:
        """About how many weights the model holds: embeddings, attention and feed-forward matrices."""
        d, layer = self.d_model, 4 * self.d_model**2 + 2 * self.d_model * self.ffn_dim
        tables = 1 if self.share_all_embeddings else 2 if self.tie_output else 3
        stacks = {
            "encoder_decoder": self.encoder_layers * layer + self.decoder_layers * (layer + 4 * d * d),
            "decoder_only": self.decoder_layers * layer,
            "encoder_only": self.encoder_layers * layer,
        }
        return tables * vocab_size * d + stacks[self.arch]

    def _decoder_only_rules(self, max_len: int, joint_vocab: bool) -> list[Rule]:
        """A decoder-only model reads source and target as one sequence of one vocabulary."""
        if self.arch != "decoder_only":
            return [(self.prefix_lm, "model.prefix_lm: only for model.arch: decoder_only")]
        longest = 2 * (max_len + 2)
        return [
            (not joint_vocab, "model.arch: decoder_only needs tokenizer.joint: true (one vocabulary)"),
            (
                self.max_positions < longest,
                f"model.max_positions: a decoder-only model holds source and target: must be >= {longest} "
                "(2 x (data.max_len + 2))",
            ),
        ]

    def _task_rules(self, joint_vocab: bool, best_metric: str) -> list[Rule]:
        """Translation is for the writing families; classify and tag for the encoder-only reader, and
        only classify pools the source's states into one (`model.pooling`)."""
        writes, reads = self._writer_rules(best_metric), self._reader_rules(joint_vocab, best_metric)
        pools = (self.pooling != "cls", "model.pooling: only for task: classify")
        return {Task.TRANSLATE: [*writes, pools], Task.CLASSIFY: reads, Task.TAG: [*reads, pools]}[self.task]

    def _writer_rules(self, best_metric: str) -> list[Rule]:
        return [
            (self.arch == "encoder_only", self._family_mismatch()),
            (best_metric == "accuracy", "train.best_metric: accuracy is for task: classify or tag"),
        ]

    def _reader_rules(self, joint_vocab: bool, best_metric: str) -> list[Rule]:
        return [
            (self.arch != "encoder_only", self._family_mismatch()),
            (not joint_vocab, f"model.task: {self.task} needs tokenizer.joint: true"),
            (
                best_metric == "bleu",
                f"train.best_metric: bleu scores translations; for task {self.task} use accuracy or loss",
            ),
        ]

    def _family_mismatch(self) -> str:
        return (
            f"model.task: {self.task} with model.arch: {self.arch}; an encoder_only model classifies "
            "or tags (task: classify | tag), the other families translate (task: translate)"
        )
