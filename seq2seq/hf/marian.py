"""A local MarianMT directory (Hugging Face's format, the OPUS-MT models') read as an s2s model:
its config, its tokenizers rewritten for s2s's ids (`marian_vocab`), its weights in s2s's names and
rows (`marian_weights`). Nothing is downloaded and no code in the directory runs: weights are read
from `model.safetensors`, or `pytorch_model.bin` with `torch.load(weights_only=True)`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from seq2seq.config import Config, DataConfig, DecodeConfig, TokenizerConfig, TrainConfig
from seq2seq.hf.marian_vocab import (
    MarianImportError,
    MarianSpecials,
    SideVocab,
    language_codes,
    model_type,
    side_vocab,
)
from seq2seq.hf.marian_weights import check_positions, model_config, s2s_weights

log = logging.getLogger(__name__)

SPM_FILES = ("source.spm", "target.spm")


@dataclass(frozen=True)
class ImportedModel:
    """A MarianMT model as s2s holds one: the run's config, each side's tokenizer, the weights."""

    config: Config
    src: SideVocab
    tgt: SideVocab
    weights: dict[str, Tensor]  # `Seq2SeqTransformer`'s state dict


def read_marian(directory: Path, run_dir: Path) -> ImportedModel:
    """The MarianMT model in `directory` (`s2s import` has checked it is one) as s2s's, its config
    naming `run_dir`."""
    config = read_json(directory / "config.json")
    model = model_config(config, str(directory / "config.json"))
    tokenizer_config = read_json(directory / "tokenizer_config.json", required=False)
    generation = read_json(directory / "generation_config.json", required=False)
    src, tgt = read_tokenizers(directory, tokenizer_config)
    tgt_spm = (directory / SPM_FILES[1]).read_bytes()
    weights = read_weights(directory)
    check_positions(weights, model)
    source, target = (str(tokenizer_config.get(f"{side}_lang") or side) for side in ("source", "target"))
    run = Config(
        run_dir=str(run_dir),
        data=placeholder_data(source, target, max_len=min(256, model.max_positions - 2)),
        tokenizer=TokenizerConfig(type=model_type(tgt_spm), vocab_size=max(len(tgt.rows), 8), joint=False),
        model=model,
        train=TrainConfig(max_steps=10_000),
        decode=DecodeConfig(beam=int(generation.get("num_beams") or config.get("num_beams") or 5)),
    )
    if problems := run.problems():
        raise MarianImportError(f"{directory}: s2s cannot hold this model: " + "; ".join(problems))
    return ImportedModel(run, src, tgt, s2s_weights(weights, model, src, tgt))


def read_tokenizers(directory: Path, tokenizer_config: dict[str, Any]) -> tuple[SideVocab, SideVocab]:
    """Each side's SentencePiece model rewritten for s2s, with the MarianMT row of each id."""
    named = {key: tokenizer_config.get(f"{key}_token") for key in ("eos", "unk", "pad")}
    specials = MarianSpecials(**{key: value for key, value in named.items() if isinstance(value, str)})
    for name in SPM_FILES:
        if not (directory / name).is_file():
            raise MarianImportError(f"{directory} has no {name} (MarianMT's SentencePiece models)")
    vocab = read_vocab(directory / "vocab.json")
    target_vocab = directory / str(tokenizer_config.get("target_vocab_file") or "target_vocab.json")
    separate = bool(tokenizer_config.get("separate_vocabs")) and target_vocab.is_file()
    src_spm, tgt_spm = ((directory / name).read_bytes() for name in SPM_FILES)
    src = side_vocab(src_spm, vocab, specials, extra=False, name="source.spm")
    tgt = side_vocab(tgt_spm, read_vocab(target_vocab) if separate else vocab, specials, True, "target.spm")
    if codes := language_codes(vocab):
        log.warning(
            "%s is multilingual: start each source line with the token of the language to translate "
            "into (%s)",
            directory,
            ", ".join(codes[:5]) + (", ..." if len(codes) > 5 else ""),
        )
    return src, tgt


def placeholder_data(source: str, target: str, max_len: int) -> DataConfig:
    """The data section of an imported run: files to fine-tune on, named for the user to replace
    (a run's config names its data; an imported run was trained on none of s2s's)."""
    return DataConfig(
        train_src=(f"data/train.{source}",),
        train_tgt=(f"data/train.{target}",),
        valid_src=f"data/valid.{source}",
        valid_tgt=f"data/valid.{target}",
        max_len=max_len,
    )


def read_weights(directory: Path) -> dict[str, Tensor]:
    """The tensors of `model.safetensors`, else of `pytorch_model.bin` (read without running code)."""
    safetensors, pickled = directory / "model.safetensors", directory / "pytorch_model.bin"
    if safetensors.is_file():
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise MarianImportError(
                "safetensors is not installed; install it with: pip install 's2s[hf]'"
            ) from None
        return load_file(str(safetensors))
    if pickled.is_file():
        try:
            state = torch.load(pickled, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - any unpickling failure means the file is unusable
            raise MarianImportError(f"cannot load {pickled}: {e}") from None
        if isinstance(state, dict) and all(isinstance(t, Tensor) for t in state.values()):
            return state
        raise MarianImportError(f"{pickled} holds no state dict of tensors")
    raise MarianImportError(f"{directory} has no model.safetensors or pytorch_model.bin (the weights)")


def read_vocab(path: Path) -> dict[str, int]:
    vocab = read_json(path)
    if not all(isinstance(i, int) for i in vocab.values()):
        raise MarianImportError(f"{path}: a vocabulary maps each piece to an integer id")
    return vocab


def read_json(path: Path, required: bool = True) -> dict[str, Any]:
    """The JSON object in `path`; {} for a missing file that is not `required`."""
    if not path.is_file():
        if required:
            raise MarianImportError(f"{path.parent} has no {path.name}: not a MarianMT model directory")
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise MarianImportError(f"cannot read {path}: {e}") from None
    if not isinstance(value, dict):
        raise MarianImportError(f"{path}: expected a JSON object")
    return value
