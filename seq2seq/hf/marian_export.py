"""A post-norm run as Hugging Face's MarianMT (`s2s export --format huggingface`, `seq2seq.hf.export`):
the reverse of `s2s import` (`seq2seq.hf.marian_weights`), for an imported OPUS-MT model after
fine-tuning, or any post-norm run whose positions are MarianMT's.

MarianMT is s2s's post-norm encoder-decoder (`model.norm: post`, no LayerNorm at a stack's end) with
embeddings scaled by sqrt(d_model), `model.activation`, a `final_logits_bias` (zero without
`model.logits_bias`) and a position table it builds in code, all sines then all cosines: s2s's
`model.positions: concatenated` (a run with interleaved positions is refused by the export's choice).
The ids are s2s's own: `vocab.json` (and `target_vocab.json`, with `share_encoder_decoder_embeddings:
false`, when each side has its own SentencePiece model), `<pad>` 0, `<unk>` 1, `<s>` 2 (the decoder's
start), `</s>` 3. The layers' tensors are named as Pegasus's (`seq2seq.hf.pegasus.layer_weights`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from seq2seq.config import DecodeConfig
from seq2seq.hf.pegasus import generation_config, layer_config, layer_weights, write_json
from seq2seq.models.encoder_decoder import Seq2SeqTransformer


def write_marian(model: Seq2SeqTransformer, decode: DecodeConfig, directory: Path) -> None:
    """`model.safetensors`, `config.json` and `generation_config.json` of `model` in `directory`."""
    from safetensors.torch import save_file

    save_file(marian_weights(model), str(directory / "model.safetensors"), metadata={"format": "pt"})
    write_json(directory / "config.json", marian_config(model))
    write_json(directory / "generation_config.json", generation_config(decode, model.max_positions))


def marian_weights(model: Seq2SeqTransformer) -> dict[str, Tensor]:
    """s2s's state dict under MarianMT's names, each tensor its own copy (no position table: MarianMT
    builds it, and does not save it)."""
    w = {name: t.detach().float() for name, t in model.state_dict().items()}
    target = w["tgt_embed.tokens.weight"]
    out = {
        # model.logits_bias, or none
        "final_logits_bias": w.get("output.bias", torch.zeros(w["output.weight"].size(0)))[None, :],
    }
    if model.cfg.share_all_embeddings:
        out["model.shared.weight"] = target
    else:
        out["model.encoder.embed_tokens.weight"] = w["src_embed.tokens.weight"]
        out["model.decoder.embed_tokens.weight"] = target
    if not model.cfg.tie_output:
        out["lm_head.weight"] = w["output.weight"]
    out |= layer_weights(w, model.cfg)
    return {name: t.contiguous().clone() for name, t in out.items()}  # safetensors stores no shared memory


def marian_config(model: Seq2SeqTransformer) -> dict[str, Any]:
    """`config.json`: MarianMT with s2s's sizes, vocabularies, ids and dropouts."""
    shared = model.cfg.share_all_embeddings
    return {
        "architectures": ["MarianMTModel"],
        "model_type": "marian",
        "vocab_size": model.src_embed.tokens.weight.size(0),
        "decoder_vocab_size": model.output.weight.size(0),
        "share_encoder_decoder_embeddings": shared,
        **layer_config(model),
    }
