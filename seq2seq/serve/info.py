"""What `s2s serve`'s /info reports (and its page shows): the run, the model, the decoding defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch

import seq2seq
from seq2seq.config import Config
from seq2seq.models.build import build_model
from seq2seq.serve.batcher import Batcher
from seq2seq.serve.limits import Limits
from seq2seq.translate.engine import Engine
from seq2seq.translate.options import DecodeOptions


def server_info(
    translator: Engine,
    defaults: DecodeOptions,
    run_name: str,
    batcher: Batcher,
    window_s: float,
    limits: Limits,
) -> dict[str, Any]:
    """What /info reports (and the page shows); `window_s` and `limits` are the server's settings."""
    cfg, search = translator.config, defaults.search
    return {
        "run": run_name,
        "checkpoints": [p.name for p in translator.checkpoints],
        "parameters": parameter_count(cfg, translator) * max(len(translator.checkpoints), 1),
        "languages": languages(cfg),
        "decode": {
            "beam": search.beam,
            "length_penalty": search.length_penalty,
            "length_norm": search.length_norm,
            "max_len_a": search.max_len_a,
            "max_len_b": search.max_len_b,
            "min_len": search.min_len,
            "no_repeat_ngram": search.no_repeat_ngram,
            "max_tokens": defaults.max_tokens,
            "call_tokens": batcher.max_tokens,  # the most one decode call collects (`Batcher`)
            "batch_window_ms": window_s * 1000,
        },
        "batching": batcher.kind,
        "limits": dataclasses.asdict(limits),
        **translator.describe(),  # engine, device, precision (or compute type), quantize, shortlist
        "versions": {"s2s": seq2seq.__version__, "torch": torch.__version__},
    }


def parameter_count(cfg: Config, translator: Engine) -> int:
    """Parameters of one model of the run, counted on an empty copy (int8 layers hide theirs)."""
    with torch.device("meta"):
        model = build_model(
            cfg.model, translator.tokenizers.src.vocab_size, translator.tokenizers.tgt.vocab_size
        )
    return sum(p.numel() for p in model.parameters())


def languages(cfg: Config) -> dict[str, str]:
    """Source and target language as the validation files' extensions say (val.de, val.en); a
    multilingual run has its languages in `target_languages` instead (its `data.valid` lists them)."""
    return {
        "source": Path(cfg.data.valid_src).suffix.removeprefix("."),
        "target": Path(cfg.data.valid_tgt).suffix.removeprefix("."),
    }
