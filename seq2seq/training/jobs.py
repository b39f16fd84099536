"""What `s2s train` and `s2s prepare` are asked: a config file with its overrides, and how to start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seq2seq.config.bounds import MAX_THREADS, SAMPLE_KEEP
from seq2seq.flags import REQUIRED, argument, group, option


@dataclass(frozen=True)
class ConfigArgs:
    """A YAML config and the keys the command line overrides in it."""

    config: Path = argument("YAML config file.")
    overrides: tuple[str, ...] = option((), "Override a config key: --set train.lr=3e-4.", "--set")


@dataclass(frozen=True)
class TrainJob:
    """`s2s train`: the config, and whether the run in its run_dir goes on or is replaced."""

    source: ConfigArgs = group(REQUIRED)
    resume: bool = option(False, "Continue the run in run_dir from checkpoints/last.pt.")
    overwrite: bool = option(
        False, "Replace the run in run_dir (put back if this fails before a first checkpoint)."
    )
    tokenizer_only: bool = option(False, "Train the tokenizer, then stop.")
    device: str | None = option(None, "auto, cpu, cuda or cuda:N (overrides train.device).")


@dataclass(frozen=True)
class PrepareJob:
    """`s2s prepare`: the config whose corpora are encoded, and what is shown of them."""

    source: ConfigArgs = group(REQUIRED)
    workers: int = option(0, "Encoding processes (0 = one per CPU core).", between=(0, MAX_THREADS))
    overwrite: bool = option(False, "Replace the run in run_dir: a new tokenizer and corpus, no checkpoints.")
    sample: int = option(
        0,
        f"Print up to N pairs each cleaning rule dropped, per corpus (N <= {SAMPLE_KEEP}).",
        between=(0, SAMPLE_KEEP),
        why=f"s2s keeps {SAMPLE_KEEP} dropped pairs per rule",
    )
    figure: Path | None = option(
        None, "Draw the length distributions and the dropped pairs into this PNG (the report extra)."
    )
