"""Export a trained run to CTranslate2, the inference engine many deployments already run.

An export directory is self-contained: CTranslate2's `model.bin`, vocabularies and `config.json`,
the run's SentencePiece model(s) in `tokenizer/`, the table of word forms its training source
gives `--restore-case` (`casing.txt`), and `s2s.json` (where it came from, the decode defaults, the
shortlist if there is one, and the sha256 of every other file). `seq2seq.ct2.runtime`
translates with it as its `s2s.json` says, once each file it names is there as the export made it
(`seq2seq.ct2.export_dir`). CTranslate2 is a dependency where it publishes wheels (Linux on x86_64 and
aarch64, macOS); elsewhere it is not installed, and s2s decodes with its own decoder.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from seq2seq.config import Config, config_to_dict
from seq2seq.config.decode import RUN_DECODING, DecodeChoice
from seq2seq.ct2.export_dir import (
    EXPORT_FORMAT,
    EXPORT_INFO,
    FULL_INT8,
    REDUCED_INT8,
    export_file_sums,
    is_int8,
    require_ctranslate2,
    vocabulary,
)
from seq2seq.ct2.shortlist import VMAP_FILE, Shortlist, ShortlistSize, build_shortlist, write_vmap
from seq2seq.data.prepared import run_trained_corpora
from seq2seq.data.tokenizer import Tokenizer, TokenizerPair, tokenizer_files
from seq2seq.errors import Seq2SeqError
from seq2seq.files import atomic_directory, check_new_directory
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.family import export_refusal
from seq2seq.translate.casing import CASING_FILE, training_source, word_forms, write_word_forms
from seq2seq.translate.cross_attention import AlignmentHeads, LastLayerMean, alignment_heads
from seq2seq.translate.weights import RunWeights, load_weights

log = logging.getLogger(__name__)


def export_ctranslate2(
    run_dir: Path,
    checkpoint: str,
    out_dir: Path,
    quantize: str | None,
    full_range_int8: bool = False,
    shortlist: ShortlistSize | None = None,
    decoding: DecodeChoice = RUN_DECODING,
) -> RunWeights:
    """Write the run's `checkpoint` weights as a CTranslate2 model to `out_dir` (new or empty), and
    return them, with the config the export keeps (a check of the export against them need not load
    them again). The export's decode defaults are the run's, `decoding`'s where it has them.

    int8 weights use 7 bits (`REDUCED_INT8`) unless `full_range_int8`: for an export that only ever
    runs where int8 products do not saturate (AVX-512 VNNI, AMX, ARM, a GPU). With `shortlist`, the
    export holds a vocabulary map counted from the run's prepared training pairs (`ct2.shortlist`),
    which `--engine ctranslate2` then decodes with.

    Made in a temporary directory beside `out_dir` and renamed into place: never half-written.
    """
    require_ctranslate2()
    check_new_directory(out_dir)
    weights = load_for_export(run_dir, checkpoint)
    config = dataclasses.replace(weights.config, decode=decoding.over(weights.config.decode))
    weights = dataclasses.replace(weights, config=config)
    counted = None
    if shortlist is not None:
        counted = shortlist, run_shortlist(Path(run_dir), weights.config, weights.tokenizers, shortlist)
    forms = word_forms(training_source(Path(run_dir)))
    write_export(weights, run_dir, out_dir, quantize, full_range_int8, counted, forms)
    return weights


def run_shortlist(run_dir: Path, cfg: Config, tokenizers: TokenizerPair, size: ShortlistSize) -> Shortlist:
    """The shortlist of the run's training pairs, as its prepared corpora hold them: those made from the
    text its inputs.json records and its tokenizer, their arrays checked (a `DataError` saying what
    differs, or is missing, and how to make them again)."""
    corpora = run_trained_corpora(Path(run_dir), cfg, tokenizers.src)
    vocab = (tokenizers.src.vocab_size, tokenizers.tgt.vocab_size)
    if size.per_source > vocab[1]:
        raise Seq2SeqError(
            f"--shortlist {size.per_source}: the run's target vocabulary has {vocab[1]} pieces; ask at "
            "most that many"
        )
    return build_shortlist(corpora, *vocab, size.per_source, size.common)


def load_for_export(run_dir: Path, checkpoint: str) -> RunWeights:
    """The run's `checkpoint` loaded in fp32 on the CPU, once it is known to be exportable (an
    encoder-decoder): what `write_export` writes, as many times as asked."""
    weights = load_weights(run_dir, [checkpoint])
    if (why := export_refusal(weights.config.model)) is not None:
        raise Seq2SeqError(f"s2s export cannot write {run_dir}: {why}")
    return weights


def write_export(
    weights: RunWeights,
    run_dir: Path,
    out_dir: Path,
    quantize: str | None,
    full_range_int8: bool = False,
    shortlist: tuple[ShortlistSize, Shortlist] | None = None,
    forms: Mapping[str, str] | None = None,
) -> None:
    """`export_ctranslate2` of a run already loaded (`load_for_export`), its `shortlist` already counted;
    with `forms`, the run's table of word forms, so that `--restore-case` recases as the run does."""
    model, cfg, tokenizers = weights.first, weights.config, weights.tokenizers
    assert isinstance(model, Seq2SeqTransformer)  # `load_for_export` checked: an encoder-decoder
    with atomic_directory(out_dir) as scratch:
        int8_range = FULL_INT8 if full_range_int8 else REDUCED_INT8
        write_model(model, tokenizers, scratch, quantize, int8_range, alignment_heads(cfg))
        (scratch / "tokenizer").mkdir()
        for path in tokenizer_files(Path(run_dir) / "tokenizer", cfg.tokenizer.joint).values():
            shutil.copyfile(path, scratch / "tokenizer" / path.name)
        info = {
            "format": EXPORT_FORMAT,
            "run_dir": str(Path(run_dir).resolve()),
            "checkpoint": str(weights.paths[0]),
            "quantize": quantize,
            "int8_range": int8_range if is_int8(quantize) else None,
            "config": config_to_dict(cfg),
            "shortlist": None,
        }
        if shortlist is not None:
            size, lexicon = shortlist
            write_vmap(
                scratch / VMAP_FILE, lexicon, vocabulary(tokenizers.src), vocabulary(tokenizers.tgt_tokenizer)
            )
            info["shortlist"] = {**dataclasses.asdict(size), "pairs_counted": lexicon.pairs}
        if forms:
            write_word_forms(scratch / CASING_FILE, forms)
        info["files"] = export_file_sums(scratch)
        (scratch / EXPORT_INFO).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    log.info("exported %s to %s (%s)", weights.paths[0], out_dir, quantize or "float32")


def write_model(
    model: Seq2SeqTransformer,
    tokenizers: TokenizerPair,
    directory: Path,
    quantize: str | None,
    int8_range: int = REDUCED_INT8,
    alignment: AlignmentHeads | None = None,
) -> None:
    """CTranslate2's files for `model` (model.bin, vocabularies, config.json) in `directory`."""
    model_spec(model, tokenizers, quantize, int8_range, alignment).save(str(directory))


def model_spec(
    model: Seq2SeqTransformer,
    tokenizers: TokenizerPair,
    quantize: str | None,
    int8_range: int = REDUCED_INT8,
    alignment: AlignmentHeads | None = None,
) -> Any:
    """`model` as a CTranslate2 spec in `quantize`, int8 weights (int8*) in [-`int8_range`, `int8_range`];
    its attention maps are those of `alignment` (the run's `alignment_heads`; by default the mean
    of the last layer's heads)."""
    heads = alignment or LastLayerMean(model.cfg.decoder_layers, model.cfg.heads)
    spec = _spec(model, tokenizers.src, tokenizers.tgt_tokenizer, heads)
    spec.validate()
    weights = _quantized_weights(spec) if is_int8(quantize) and int8_range != FULL_INT8 else []
    spec.optimize(quantization=quantize)
    for owner, key, value in weights:
        if not isinstance(getattr(owner, key), str):  # a str: optimize made it an alias of a twin
            _quantize_rows(owner, key, value, int8_range)
    return spec


def _quantized_weights(spec: Any) -> list[tuple[Any, str, np.ndarray]]:
    """(sub-spec, attribute, float32 value) of each weight CTranslate2 quantizes: those with a
    `_scale` beside them, as its own optimize picks them."""
    from ctranslate2.specs.model_spec import Variable, visit_spec

    found = []

    def visit(owner: Any, name: str, value: Any) -> None:
        key = name.rsplit("/", 1)[-1]
        if isinstance(value, Variable) and not value.is_scalar() and hasattr(owner, f"{key}_scale"):
            found.append((owner, key, value.to("float32").numpy().copy()))

    visit_spec(spec, visit)
    return found


def _quantize_rows(owner: Any, key: str, value: np.ndarray, limit: int) -> None:
    """`owner.key` = `value` in int8 within [-limit, limit], one scale per row (CTranslate2's layout:
    float = int8 / scale)."""
    from ctranslate2.specs.model_spec import NumpyVariable

    amax = np.abs(value).max(axis=1)
    amax = np.maximum(np.where(amax == 0, 1.0, amax), np.float32(limit) / np.finfo(np.float32).max)
    scale = (np.float32(limit) / amax).astype(np.float32)
    setattr(owner, key, NumpyVariable(np.rint(value * scale[:, None]).astype(np.int8)))
    setattr(owner, f"{key}_scale", NumpyVariable(scale))


def _spec(model: Seq2SeqTransformer, src: Tokenizer, tgt: Tokenizer, alignment: AlignmentHeads) -> Any:
    """The CTranslate2 TransformerSpec holding `model`'s weights, `alignment` its attention maps'
    heads (CTranslate2 averages the first `alignment_heads` heads of `alignment_layer`).

    s2s and CTranslate2 agree on the layout (fused [q; k; v] self-attention, fused [k; v] cross
    attention, scaled embeddings); the positions are given as a table, the model's own (s2s
    interleaves sine and cosine by default, where CTranslate2's own table concatenates them).
    """
    from ctranslate2.specs import common_spec, transformer_spec

    cfg = model.cfg
    pre_norm = cfg.norm == "pre"
    activation = {"relu": "RELU", "swish": "SWISH", "gelu": "GELU"}[cfg.activation]
    spec = transformer_spec.TransformerSpec.from_config(
        (cfg.encoder_layers, cfg.decoder_layers),
        cfg.heads,
        pre_norm=pre_norm,
        no_final_norm=not pre_norm,
        activation=common_spec.Activation[activation],
        alignment_layer=alignment.layer,
        alignment_heads=alignment.heads,
    )
    # copies: CTranslate2's optimize quantizes its arrays in place, which would rescale the model's own
    weights = {k: v.detach().float().numpy().copy() for k, v in model.state_dict().items()}
    positions = model.src_embed.positions.float().numpy()
    for side, embed in ((spec.encoder, "src_embed"), (spec.decoder, "tgt_embed")):
        _first(side.embeddings).weight = weights[f"{embed}.tokens.weight"]
        side.scale_embeddings = True
        side.position_encodings.encodings = positions
    for i, layer in enumerate(spec.encoder.layer):
        p = f"encoder.{i}."
        _attention(layer.self_attention, weights, p + "attn.", ["qkv"], p + "res_attn.norm")
        _ffn(layer.ffn, weights, p)
    for i, layer in enumerate(spec.decoder.layer):
        p = f"decoder.{i}."
        _attention(layer.self_attention, weights, p + "self_attn.", ["qkv"], p + "res_self.norm")
        _attention(layer.attention, weights, p + "cross_attn.", ["q", "kv"], p + "res_cross.norm")
        _ffn(layer.ffn, weights, p)
    if pre_norm:
        _norm(spec.encoder.layer_norm, weights, "enc_norm")
        _norm(spec.decoder.layer_norm, weights, "dec_norm")
    spec.decoder.projection.weight = weights["output.weight"]
    if "output.bias" in weights:  # model.logits_bias
        spec.decoder.projection.bias = weights["output.bias"]
    spec.register_source_vocabulary(vocabulary(src))
    spec.register_target_vocabulary(vocabulary(tgt))
    spec.config.add_source_eos = True  # s2s's sources end in </s>
    spec.config.layer_norm_epsilon = 1e-5  # torch's LayerNorm default
    return spec


def _first(embeddings: Any) -> Any:
    return embeddings[0] if isinstance(embeddings, list) else embeddings


def _attention(spec: Any, w: dict[str, Any], prefix: str, inputs: list[str], norm: str) -> None:
    for linear, name in zip(spec.linear, [*inputs, "out"], strict=True):
        linear.weight, linear.bias = w[f"{prefix}{name}.weight"], w[f"{prefix}{name}.bias"]
    _norm(spec.layer_norm, w, norm)


def _ffn(spec: Any, w: dict[str, Any], prefix: str) -> None:
    spec.linear_0.weight, spec.linear_0.bias = w[prefix + "ffn.up.weight"], w[prefix + "ffn.up.bias"]
    spec.linear_1.weight, spec.linear_1.bias = w[prefix + "ffn.down.weight"], w[prefix + "ffn.down.bias"]
    _norm(spec.layer_norm, w, prefix + "res_ffn.norm")


def _norm(spec: Any, w: dict[str, Any], name: str) -> None:
    spec.gamma, spec.beta = w[f"{name}.weight"], w[f"{name}.bias"]
