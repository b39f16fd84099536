"""A pre-norm run as Hugging Face's Pegasus (`s2s export --format huggingface`, `seq2seq.hf.export`).

A pre-norm encoder-decoder with one embedding matrix for both sides is, layer for layer, the layout
of `PegasusForConditionalGeneration`: pre-norm layers with a final LayerNorm in each stack, token
embeddings scaled by sqrt(d_model), feed-forward blocks of `model.activation`, biased projections.
Two differences are solved exactly rather than approximated:

- **positions**: s2s interleaves sine and cosine, Pegasus concatenates them; Pegasus reads its
  position table from the weights file (`embed_positions.weight`), so the export stores s2s's own
  table there (MarianMT, the post-norm layout, builds its table in code: `seq2seq.hf.marian_export`);
- **fused projections**: s2s's [q; k; v] and cross-attention [k; v] matrices are split into
  `q_proj`, `k_proj` and `v_proj`.

The tokenizer is `MarianTokenizer`: SentencePiece itself (the run's model, as `source.spm` and
`target.spm`) and `vocab.json` (s2s's ids), with the control tokens (`<2de>`, tags) as special
tokens, so a source starting with `<2de>` reads as one id. The generation config carries the run's
decode defaults under Hugging Face's rules: the sum of log-probabilities over length ** alpha (s2s's
`power` rule), `<pad>` and `<s>` never chosen, the distribution renormalized over what is allowed.

Nothing here imports `transformers`: the export needs only `safetensors` (`s2s[hf]`).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from seq2seq.config import DecodeConfig, ModelConfig
from seq2seq.data.tokenizer import Tokenizer, TokenizerPair, tokenizer_files
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.special import BOS, EOS, PAD, UNK

log = logging.getLogger(__name__)


def write_model(model: Seq2SeqTransformer, decode: DecodeConfig, directory: Path) -> None:
    """`model.safetensors`, `config.json` and `generation_config.json` of `model` in `directory`."""
    from safetensors.torch import save_file

    save_file(pegasus_weights(model), str(directory / "model.safetensors"), metadata={"format": "pt"})
    write_json(directory / "config.json", pegasus_config(model))
    write_json(directory / "generation_config.json", generation_config(decode, model.max_positions))


def pegasus_weights(model: Seq2SeqTransformer) -> dict[str, Tensor]:
    """s2s's state dict under Pegasus's names, fused projections split, each tensor its own copy."""
    w = {name: t.detach().float() for name, t in model.state_dict().items()}
    positions = model.src_embed.positions[: model.max_positions].float()
    out = {
        "model.shared.weight": w["tgt_embed.tokens.weight"],
        "model.encoder.embed_positions.weight": positions,
        "model.decoder.embed_positions.weight": positions,
        # model.logits_bias, or none
        "final_logits_bias": w.get("output.bias", torch.zeros(w["output.weight"].size(0)))[None, :],
    }
    if not model.cfg.tie_output:
        out["lm_head.weight"] = w["output.weight"]
    out |= layer_weights(w, model.cfg)
    out |= _linear(w, "enc_norm", "model.encoder.layer_norm")
    out |= _linear(w, "dec_norm", "model.decoder.layer_norm")
    return {name: t.contiguous().clone() for name, t in out.items()}  # safetensors stores no shared memory


def layer_weights(w: dict[str, Tensor], cfg: ModelConfig) -> dict[str, Tensor]:
    """Each encoder and decoder layer's tensors (of s2s's state dict `w`) under the names Pegasus and
    MarianMT share (BART's), the fused projections split."""
    out: dict[str, Tensor] = {}
    for i in range(cfg.encoder_layers):
        s2s, hf = f"encoder.{i}.", f"model.encoder.layers.{i}."
        out |= _split(
            w, s2s + "attn.qkv", [hf + "self_attn.q_proj", hf + "self_attn.k_proj", hf + "self_attn.v_proj"]
        )
        out |= _linear(w, s2s + "attn.out", hf + "self_attn.out_proj")
        out |= _linear(w, s2s + "res_attn.norm", hf + "self_attn_layer_norm")
        out |= _ffn(w, s2s, hf)
    for i in range(cfg.decoder_layers):
        s2s, hf = f"decoder.{i}.", f"model.decoder.layers.{i}."
        out |= _split(
            w,
            s2s + "self_attn.qkv",
            [hf + "self_attn.q_proj", hf + "self_attn.k_proj", hf + "self_attn.v_proj"],
        )
        out |= _linear(w, s2s + "self_attn.out", hf + "self_attn.out_proj")
        out |= _linear(w, s2s + "res_self.norm", hf + "self_attn_layer_norm")
        out |= _linear(w, s2s + "cross_attn.q", hf + "encoder_attn.q_proj")
        out |= _split(w, s2s + "cross_attn.kv", [hf + "encoder_attn.k_proj", hf + "encoder_attn.v_proj"])
        out |= _linear(w, s2s + "cross_attn.out", hf + "encoder_attn.out_proj")
        out |= _linear(w, s2s + "res_cross.norm", hf + "encoder_attn_layer_norm")
        out |= _ffn(w, s2s, hf)
    return out


def _linear(w: dict[str, Tensor], s2s: str, hf: str) -> dict[str, Tensor]:
    """A linear layer's or LayerNorm's weight and bias, renamed."""
    return {f"{hf}.weight": w[f"{s2s}.weight"], f"{hf}.bias": w[f"{s2s}.bias"]}


def _split(w: dict[str, Tensor], s2s: str, hf: list[str]) -> dict[str, Tensor]:
    """A fused projection's output rows ([q; k; v] or [k; v]) as one layer each."""
    weights, biases = w[f"{s2s}.weight"].chunk(len(hf)), w[f"{s2s}.bias"].chunk(len(hf))
    return {
        k: v
        for name, a, b in zip(hf, weights, biases, strict=True)
        for k, v in ((f"{name}.weight", a), (f"{name}.bias", b))
    }


def _ffn(w: dict[str, Tensor], s2s: str, hf: str) -> dict[str, Tensor]:
    return (
        _linear(w, s2s + "ffn.up", hf + "fc1")
        | _linear(w, s2s + "ffn.down", hf + "fc2")
        | _linear(w, s2s + "res_ffn.norm", hf + "final_layer_norm")
    )


def pegasus_config(model: Seq2SeqTransformer) -> dict[str, Any]:
    """`config.json`: Pegasus with s2s's sizes, ids and dropouts (for fine-tuning in transformers)."""
    return {
        "architectures": ["PegasusForConditionalGeneration"],
        "model_type": "pegasus",
        "vocab_size": model.output.weight.size(0),
        **layer_config(model),
    }


def layer_config(model: Seq2SeqTransformer) -> dict[str, Any]:
    """What Pegasus's and MarianMT's `config.json` say alike: sizes, dropouts, ids, embedding rules."""
    m = model.cfg
    return {
        "d_model": m.d_model,
        "encoder_layers": m.encoder_layers,
        "decoder_layers": m.decoder_layers,
        "encoder_attention_heads": m.heads,
        "decoder_attention_heads": m.heads,
        "encoder_ffn_dim": m.ffn_dim,
        "decoder_ffn_dim": m.ffn_dim,
        "activation_function": m.activation,  # transformers' names: relu, swish, gelu
        "dropout": m.dropout,
        "attention_dropout": m.attention_dropout,
        "activation_dropout": m.activation_dropout,
        "encoder_layerdrop": 0.0,
        "decoder_layerdrop": 0.0,
        "max_position_embeddings": model.max_positions,
        "scale_embedding": True,
        "tie_word_embeddings": m.tie_output,
        "is_encoder_decoder": True,
        "pad_token_id": PAD,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "decoder_start_token_id": BOS,  # s2s's decoder reads <s> first
        "forced_eos_token_id": None,  # the default forces id 1 or 0 (s2s's <unk>, <pad>) at max_length
        "use_cache": True,
        "dtype": "float32",
    }


def generation_config(decode: DecodeConfig, max_positions: int) -> dict[str, Any]:
    """`generation_config.json`: the run's decode defaults as `generate` takes them.

    `generate` has no limit relative to the source: s2s allows max_len_a x source tokens (</s>
    included) + max_len_b steps, </s> included and forced at the last, which is `max_new_tokens`
    one less (a translation cut there ends without </s>, and both count the same steps); the
    default is the model's positions."""
    config: dict[str, Any] = {
        "decoder_start_token_id": BOS,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "forced_eos_token_id": None,
        "num_beams": decode.beam,
        "length_penalty": decode.length_penalty,
        # stop only when no live beam can still win: what s2s's search finds with a large
        # decode.patience, or a better-scoring translation than at the run's (generate has no patience)
        "early_stopping": "never",
        "max_length": max_positions,
        "suppress_tokens": [PAD, BOS],  # never chosen in s2s's search
        "renormalize_logits": True,  # log-probabilities over the tokens allowed, as s2s scores them
    }
    if decode.min_len:
        config["min_new_tokens"] = decode.min_len
    if decode.no_repeat_ngram:
        config["no_repeat_ngram_size"] = decode.no_repeat_ngram
    return config


def write_tokenizer(
    tokenizers: TokenizerPair, tokenizer_dir: Path, max_positions: int, directory: Path
) -> None:
    """MarianTokenizer's files: each side's SentencePiece model (`source.spm`, `target.spm`: the one
    model twice for a joint vocabulary), s2s's ids (`vocab.json`, and `target_vocab.json` when the
    sides have their own), the special tokens."""
    joint = tokenizers.joint
    files = tokenizer_files(tokenizer_dir, joint)
    shutil.copyfile(files["joint" if joint else "src"], directory / "source.spm")
    shutil.copyfile(files["joint" if joint else "tgt"], directory / "target.spm")
    sides = {"vocab.json": tokenizers.src} | (
        {} if joint else {"target_vocab.json": tokenizers.tgt_tokenizer}
    )
    for name, tokenizer in sides.items():
        write_json(directory / name, {piece: i for i, piece in enumerate(pieces_of(tokenizer))})
    pieces, sp = pieces_of(tokenizers.src), tokenizers.src.sp
    # the run's control tokens (`<sep>`, `<cls>`, tags, `<2de>`): one id each, never SentencePiece text
    controls = [p for i, p in enumerate(pieces) if sp.is_control(i) and i not in (PAD, BOS, EOS)]
    special = {"unk_token": pieces[UNK], "eos_token": pieces[EOS], "pad_token": pieces[PAD]}
    write_json(
        directory / "tokenizer_config.json",
        {
            "tokenizer_class": "MarianTokenizer",
            "model_max_length": max_positions,
            "separate_vocabs": not joint,
            **special,
            "additional_special_tokens": controls,
        },
    )
    write_json(directory / "special_tokens_map.json", {**special, "additional_special_tokens": controls})


def pieces_of(tokenizer: Tokenizer) -> list[str]:
    """Every piece of the tokenizer's model, by id."""
    return [tokenizer.sp.id_to_piece(i) for i in range(tokenizer.sp.get_piece_size())]


def write_json(path: Path, value: Any) -> None:
    write_text(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")  # inside the export's scratch directory: renamed whole
