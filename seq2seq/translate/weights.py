"""A run's weights as models: what every reader of a run's checkpoints shares, s2s's decoder
(`Translator.load`) and the exports (`ct2.conversion`, `hf.export`), which need the weights, not a
decoder.

Each checkpoint named must have been trained with the run's model config and tokenizer files
(`checkpoint.check_checkpoints_fit`, every one checked before any model is built); each is built as
the run's model, in float32 on the CPU, in eval mode.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seq2seq.checkpoint import check_checkpoints_fit, inference_weights, load_checkpoint
from seq2seq.config import Config
from seq2seq.data.tokenizer import TokenizerPair, load_tokenizers, tokenizer_checksums
from seq2seq.errors import RunDirError
from seq2seq.models.build import Model, build_model
from seq2seq.run.layout import RunDir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunWeights:
    """A run's config, its tokenizers, and one model per checkpoint asked for (in that order)."""

    config: Config
    tokenizers: TokenizerPair
    models: list[Model]
    paths: list[Path]  # the checkpoint files the models came from

    @property
    def first(self) -> Model:
        return self.models[0]


def load_weights(run_dir: str | Path, checkpoints: Sequence[str] = ("best",)) -> RunWeights:
    """The run's `checkpoints` (best, last, a name in checkpoints/ or a path) as its models."""
    run = RunDir(run_dir)
    cfg = run.load_config()
    paths = [run.checkpoint_path(name) for name in checkpoints]
    tokenizers = load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint, cfg.model.right_to_left)
    sums = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
    # mapped, not read: an ensemble's members are all checked (and listed) before any is built
    states = [(path, load_checkpoint(path, mmap=True)) for path in paths]
    check_checkpoints_fit(states, cfg, sums)
    models = []
    for path, state in states:
        model = build_model(
            cfg.model, tokenizers.src.vocab_size, tokenizers.tgt.vocab_size, tokenizers.src.word_starts()
        )
        try:
            model.load_state_dict(inference_weights(state, path))
        except RuntimeError:
            raise RunDirError(f"{path} does not fit the model described in {run.config_file}") from None
        log.info("loaded %s", path)
        models.append(model.eval())
    return RunWeights(cfg, tokenizers, models, paths)
