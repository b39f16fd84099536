"""A MarianMT model's weights and config as s2s's: `config.json` -> `ModelConfig`, its tensors ->
`Seq2SeqTransformer`'s state dict (the reverse of `seq2seq.hf.pegasus`'s mapping).

MarianMT is s2s's post-norm encoder-decoder (`model.norm: post`: a LayerNorm after each residual
sum and none at the end of a stack) with embeddings scaled by sqrt(d_model), given three more
options: its activation (`model.activation`, swish in most OPUS-MT models), its position table
(`model.positions: concatenated`, all sines then all cosines) and its `final_logits_bias`
(`model.logits_bias`). Its separate q/k/v projections are fused into s2s's [q; k; v] and [k; v].
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from seq2seq.config import ModelConfig
from seq2seq.hf.marian_vocab import MarianImportError, SideVocab
from seq2seq.models.layers import sinusoidal_positions

ACTIVATIONS = {"relu": "relu", "swish": "swish", "silu": "swish", "gelu": "gelu"}  # transformers' -> s2s's
NEVER = -1e4  # the logit bias of a target id whose row an earlier id reads: never written


def model_config(config: dict[str, Any], name: str) -> ModelConfig:
    """The `model` section of a MarianMT `config.json` (`name` in errors); what s2s cannot reproduce
    is refused, saying what."""
    if config.get("model_type") != "marian":
        raise MarianImportError(
            f"{name}: model_type {config.get('model_type')!r}; s2s imports MarianMT models "
            "(model_type marian, as the OPUS-MT models are published)"
        )
    activation = config.get("activation_function", "swish")
    same = {
        "attention heads": ("encoder_attention_heads", "decoder_attention_heads"),
        "feed-forward sizes": ("encoder_ffn_dim", "decoder_ffn_dim"),
    }
    problems = [
        f"encoder and decoder {what} differ ({config.get(a)} and {config.get(b)}); s2s's are one size"
        for what, (a, b) in same.items()
        if config.get(a) != config.get(b)
    ]
    if activation not in ACTIVATIONS:
        problems.append(f"activation_function {activation!r}; s2s has {', '.join(ACTIVATIONS)}")
    if not config.get("scale_embedding", False):
        problems.append("scale_embedding is false; s2s scales embeddings by sqrt(d_model)")
    for key in ("normalize_before", "normalize_embedding", "add_final_layer_norm"):
        if config.get(key, False):  # BART's options, false in every MarianMT model
            problems.append(f"{key} is true; MarianMT's layers are post-norm, with no other LayerNorm")
    if problems:
        raise MarianImportError(f"{name}: " + "; ".join(problems))
    return ModelConfig(
        d_model=int(config["d_model"]),
        heads=int(config["encoder_attention_heads"]),
        ffn_dim=int(config["encoder_ffn_dim"]),
        encoder_layers=int(config["encoder_layers"]),
        decoder_layers=int(config["decoder_layers"]),
        dropout=float(config.get("dropout", 0.1)),
        attention_dropout=float(config.get("attention_dropout", 0.0)),
        activation_dropout=float(config.get("activation_dropout", 0.0)),
        activation=ACTIVATIONS[activation],  # type: ignore[arg-type]
        norm="post",
        max_positions=int(config.get("max_position_embeddings", 512)),
        positions="concatenated",
        logits_bias=True,
        share_all_embeddings=False,  # one SentencePiece model per side: two tables (`marian_vocab`)
        tie_output=bool(config.get("tie_word_embeddings", True)),
    )


def s2s_weights(w: dict[str, Tensor], cfg: ModelConfig, src: SideVocab, tgt: SideVocab) -> dict[str, Tensor]:
    """`Seq2SeqTransformer`'s state dict from MarianMT's tensors `w`, rows in s2s's ids."""
    embeddings = marian_embeddings(w, cfg.tie_output)
    for side, vocab, table in (("source", src, "source"), ("target", tgt, "output")):
        if max(vocab.rows) >= embeddings[table].size(0):
            raise MarianImportError(
                f"the {side} vocabulary has ids up to {max(vocab.rows)}, the weights "
                f"{embeddings[table].size(0)} rows: vocab.json does not belong to these weights"
            )
    bias = w.get("final_logits_bias", torch.zeros(1, embeddings["target"].size(0))).reshape(-1)
    never = torch.tensor(tgt.doubled)
    out = {
        "src_embed.tokens.weight": embeddings["source"][src.rows],
        "tgt_embed.tokens.weight": embeddings["target"][tgt.rows],
        "output.weight": embeddings["output"][tgt.rows],
        "output.bias": bias[tgt.rows].masked_fill(never, NEVER),
    }
    for i in range(cfg.encoder_layers):
        hf, s2s = f"model.encoder.layers.{i}.", f"encoder.{i}."
        out |= _fused(w, [hf + f"self_attn.{x}_proj" for x in "qkv"], s2s + "attn.qkv")
        out |= _linear(w, hf + "self_attn.out_proj", s2s + "attn.out")
        out |= _linear(w, hf + "self_attn_layer_norm", s2s + "res_attn.norm")
        out |= _ffn(w, hf, s2s)
    for i in range(cfg.decoder_layers):
        hf, s2s = f"model.decoder.layers.{i}.", f"decoder.{i}."
        out |= _fused(w, [hf + f"self_attn.{x}_proj" for x in "qkv"], s2s + "self_attn.qkv")
        out |= _linear(w, hf + "self_attn.out_proj", s2s + "self_attn.out")
        out |= _linear(w, hf + "self_attn_layer_norm", s2s + "res_self.norm")
        out |= _linear(w, hf + "encoder_attn.q_proj", s2s + "cross_attn.q")
        out |= _fused(w, [hf + f"encoder_attn.{x}_proj" for x in "kv"], s2s + "cross_attn.kv")
        out |= _linear(w, hf + "encoder_attn.out_proj", s2s + "cross_attn.out")
        out |= _linear(w, hf + "encoder_attn_layer_norm", s2s + "res_cross.norm")
        out |= _ffn(w, hf, s2s)
    return {name: t.float().contiguous() for name, t in out.items()}


def marian_embeddings(w: dict[str, Tensor], tied_output: bool) -> dict[str, Tensor]:
    """The source and target embeddings and the output projection (V, D), in MarianMT's rows, as
    transformers ties them: a missing table is the one it is tied to."""
    source = _first(w, "model.encoder.embed_tokens.weight", "model.shared.weight")
    target = _first(w, "model.decoder.embed_tokens.weight", "model.shared.weight")
    if source is None or target is None:
        raise MarianImportError("the weights hold no token embeddings (model.shared.weight)")
    output = target if tied_output else w.get("lm_head.weight")
    if output is None:
        raise MarianImportError("tie_word_embeddings is false but the weights hold no lm_head.weight")
    return {"source": source, "target": target, "output": output}


def check_positions(w: dict[str, Tensor], cfg: ModelConfig) -> None:
    """A position table stored with the weights must be the one s2s builds (MarianMT's own layout)."""
    ours = sinusoidal_positions(cfg.max_positions, cfg.d_model, cfg.positions)
    for side in ("encoder", "decoder"):
        stored = w.get(f"model.{side}.embed_positions.weight")
        if stored is not None and not torch.allclose(stored.float(), ours[: stored.size(0)], atol=1e-4):
            raise MarianImportError(
                f"model.{side}.embed_positions.weight is not MarianMT's sinusoidal table; learned "
                "positions are not supported"
            )


def _first(w: dict[str, Tensor], *names: str) -> Tensor | None:
    return next((w[name] for name in names if name in w), None)


def _tensor(w: dict[str, Tensor], name: str) -> Tensor:
    if name not in w:
        raise MarianImportError(f"the weights lack {name}: not a complete MarianMT model")
    return w[name]


def _linear(w: dict[str, Tensor], hf: str, s2s: str) -> dict[str, Tensor]:
    """A linear layer's or LayerNorm's weight and bias, renamed."""
    return {f"{s2s}.{p}": _tensor(w, f"{hf}.{p}") for p in ("weight", "bias")}


def _fused(w: dict[str, Tensor], hf: list[str], s2s: str) -> dict[str, Tensor]:
    """Separate projections as one, their output rows stacked ([q; k; v] or [k; v])."""
    return {f"{s2s}.{p}": torch.cat([_tensor(w, f"{name}.{p}") for name in hf]) for p in ("weight", "bias")}


def _ffn(w: dict[str, Tensor], hf: str, s2s: str) -> dict[str, Tensor]:
    return (
        _linear(w, hf + "fc1", s2s + "ffn.up")
        | _linear(w, hf + "fc2", s2s + "ffn.down")
        | _linear(w, hf + "final_layer_norm", s2s + "res_ffn.norm")
    )
