"""Checkpoint files: written whole or not at all, read without running code, checked against the run.

Checkpoints are written to a temporary file and renamed, so a crash or a full disk never leaves a
half-written one, and are read with `torch.load(weights_only=True)`, so loading one can never run
code. Each holds the config and the tokenizer checksums it was trained with, so a checkpoint from
another run is refused instead of producing garbage. Where they live is `seq2seq.run.layout`'s business.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from seq2seq.config import Config, config_differences, config_to_dict
from seq2seq.errors import RunDirError
from seq2seq.files import atomic_output, disk_error
from seq2seq.run.layout import RunDir


def atomic_save(obj: Any, path: Path) -> None:
    """torch.save to a temporary file in the same directory, fsync, then rename over `path`.

    A failed write (a full disk makes torch.save raise RuntimeError) names `path` and leaves the
    previous file intact.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise disk_error(path, e) from None
    with atomic_output(path, binary=True) as f:
        try:
            torch.save(obj, f)
        except RuntimeError as e:
            raise disk_error(path, e) from None


def atomic_link(source: Path, path: Path) -> None:
    """Make `path` name the same file as `source` (hard link, copy if links are not supported)."""
    tmp = path.with_name(f".{path.name}.link.tmp")
    try:
        tmp.unlink(missing_ok=True)
        try:
            os.link(source, tmp)
        except OSError:
            tmp.write_bytes(source.read_bytes())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise disk_error(path, e) from None


RESUME_ONLY = ("optimizer", "scheduler", "scaler", "rng")  # state only `--resume` needs


def save_training_state(
    run: RunDir,
    state: dict[str, Any],
    step: int,
    keep: int,
    is_best: bool,
    numbered: bool = True,
    optimizer_in_last_only: bool = False,
) -> None:
    """Write `step_N.pt`, `last.pt` (and `best.pt` if `is_best`); prune old numbered ones.

    With `optimizer_in_last_only` (train.keep_optimizer: last) the numbered checkpoint (and so
    `best.pt`) leaves out the optimizer and the other resume-only state, a third of the size, and
    `last.pt` is written in full beside it; otherwise `last.pt` is the numbered file itself (a hard
    link). With `numbered=False` (an interrupted run) only `last.pt` is written.
    """
    last = run.checkpoint_file("last")
    if not numbered:
        atomic_save(state, last)
        return
    path = run.step_checkpoint(step)
    if optimizer_in_last_only:
        atomic_save({k: v for k, v in state.items() if k not in RESUME_ONLY}, path)
        atomic_save(state, last)
    else:
        atomic_save(state, path)
        atomic_link(path, last)
    if is_best:
        atomic_link(path, run.checkpoint_file("best"))
    numbered_files = run.numbered_checkpoints()
    for old in numbered_files[: max(len(numbered_files) - keep, 0)]:
        old.unlink()


def load_checkpoint(path: Path, device: str | torch.device = "cpu", mmap: bool = False) -> dict[str, Any]:
    """The checkpoint's contents; with `mmap` its tensors are mapped, not read (to look at its records)."""
    try:
        return torch.load(path, map_location=device, weights_only=True, mmap=mmap)
    except Exception as e:  # noqa: BLE001 - any unpickling failure means the file is unusable
        raise RunDirError(f"cannot load checkpoint {path}: {e}") from None


def inference_weights(state: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """The weights to translate with: those that validated better (raw or moving average) at this step.

    A LoRA run's checkpoint (`path`) holds adapters only: they are merged into the frozen weights its
    run saved once, `base.pt` beside it (`seq2seq.training.adapters`), so every reader gets plain
    weights of the model its config describes.
    """
    weights = state[state.get("inference", "ema" if "ema" in state else "model")]
    record = state.get("adapters")
    if record is None:
        return weights
    return merge_adapters(adapter_base(record, path)["model"], weights, float(record["scale"]))


@torch.no_grad()
def merge_adapters(base: dict[str, Tensor], adapters: dict[str, Tensor], scale: float) -> dict[str, Tensor]:
    """The plain weights of the adapted model: `base` with W + scale B A for each adapted projection
    (computed in float64, stored in W's dtype); `base` itself is not changed."""
    merged = dict(base)
    for key in adapters:
        if not key.endswith(".lora_a"):
            continue
        projection = key.removesuffix(".lora_a")
        a, b = adapters[key].double(), adapters[f"{projection}.lora_b"].double()
        weight = base[f"{projection}.weight"]
        merged[f"{projection}.weight"] = (weight.double() + scale * (b @ a)).to(weight.dtype)
    return merged


def adapter_base(record: dict[str, Any], path: Path | None) -> dict[str, Any]:
    """The checkpoint of frozen weights that the adapters of checkpoint `path` (`record`: its
    `adapters` entry) were trained beside, checked to be that one."""
    if path is None:
        raise RunDirError("a LoRA checkpoint was given without its path, so its base weights cannot be found")
    base_path = path.parent / str(record["base"])
    if not base_path.is_file():
        raise RunDirError(
            f"{path} holds LoRA adapters only, and the weights they were trained beside, {base_path}, "
            "are missing: keep the run's checkpoints/base.pt beside its checkpoints"
        )
    base = load_checkpoint(base_path, mmap=True)
    if base.get("base_id") != record["base_id"]:
        raise RunDirError(
            f"{path} holds LoRA adapters trained beside other weights than {base_path} (another run's): "
            "use the checkpoints of the run they came from"
        )
    return base


def checkpoint_inputs(cfg: Config, tokenizer_sums: dict[str, str]) -> dict[str, Any]:
    """What a checkpoint records about its origin: the config and the tokenizer checksums."""
    return {"config": config_to_dict(cfg), "tokenizer_sha256": tokenizer_sums}


ORIGIN_SECTIONS = ("model", "tokenizer")  # what weights are bound to: the model (its task too), the tokenizer


def origin_differences(
    state: dict[str, Any], cfg: Config, tokenizer_sums: dict[str, str], may_differ: Sequence[str] = ()
) -> list[str]:
    """How the checkpoint's recorded origin differs from a run's config and tokenizer files (none: it
    belongs there): each differing model or tokenizer setting (the task among them) but the dotted keys
    `may_differ`, each tokenizer file (the label set too) with another checksum or on one side only."""
    config, recorded = state.get("config"), state.get("tokenizer_sha256")
    if not isinstance(config, dict) or not isinstance(recorded, dict):
        return ["it records no config or tokenizer checksums, so nothing shows what it was trained with"]
    differences = [
        f"{key}: checkpoint {old!r}, run {value!r}"
        for key, old, value in config_differences(config, config_to_dict(cfg), ORIGIN_SECTIONS)
        if key not in may_differ
    ]
    for name in sorted(recorded.keys() | tokenizer_sums.keys()):
        if name not in tokenizer_sums:
            differences.append(f"tokenizer/{name}: the checkpoint was trained with it, the run has none")
        elif name not in recorded:
            differences.append(f"tokenizer/{name}: the run has it, the checkpoint was trained without it")
        elif recorded[name] != tokenizer_sums[name]:
            differences.append(f"tokenizer/{name}: the checkpoint was trained with another tokenizer file")
    return differences


def check_checkpoints_fit(
    checkpoints: Sequence[tuple[Path, dict[str, Any]]],
    cfg: Config,
    tokenizer_sums: dict[str, str],
    may_differ: Sequence[str] = (),
) -> None:
    """Refuse checkpoints that do not belong with a run (and so with each other), listing every
    difference of each one; the one check for everything that combines weights with a run: translating,
    ensembling, averaging and `train.init_from`."""
    wrong = [
        (path, d)
        for path, state in checkpoints
        if (d := origin_differences(state, cfg, tokenizer_sums, may_differ))
    ]
    if not wrong:
        return
    listed = [f"{path} does not belong to this run:\n  " + "\n  ".join(d) for path, d in wrong]
    raise RunDirError(
        "\n".join(listed) + "\nuse checkpoints of this run, or the run directory they came from"
    )


def check_fits_run(
    state: dict[str, Any],
    path: Path,
    cfg: Config,
    tokenizer_sums: dict[str, str],
    may_differ: Sequence[str] = (),
) -> None:
    """Refuse a checkpoint whose model, task, tokenizer settings (but the dotted keys `may_differ`) or
    tokenizer files differ from the run's."""
    check_checkpoints_fit([(path, state)], cfg, tokenizer_sums, may_differ)


@dataclass(frozen=True)
class InitSource:
    """Where a fine-tuning run takes its weights and tokenizer from."""

    run: RunDir
    checkpoint: Path
    layers: dict[str, tuple[int, ...]] = field(default_factory=dict)  # a smaller model's start (shrink.py)


def init_source(cfg: Config) -> InitSource:
    """`train.init_from` (a run directory, or a checkpoint file inside one) as a run and a checkpoint."""
    given = Path(cfg.train.init_from)
    if given.is_file():
        run = RunDir(given.parent.parent)  # RUN/checkpoints/NAME.pt
        if not run.config_file.is_file():
            raise RunDirError(
                f"train.init_from: {given} is not inside an s2s run directory; the weights need the "
                "run's tokenizer and config, so give the run directory (or a checkpoint inside it)"
            )
        return InitSource(run, given)
    if not given.is_dir():
        raise RunDirError(f"train.init_from: {given} is neither a run directory nor a checkpoint file")
    run = RunDir(given)
    run.load_config()  # says so when it is not a run directory
    return InitSource(run, run.checkpoint_path(cfg.train.init_checkpoint))


def check_tokenizer_source(cfg: Config) -> None:
    """`train.tokenizer_from` is a run directory with a tokenizer made with this config's tokenizer
    section, or an error lists each difference."""
    source = RunDir(cfg.train.tokenizer_from)
    saved = config_to_dict(source.load_config())  # says so when it is not a run directory
    differences = [
        f"{key}: {old!r} in {source.path}, {value!r} here"
        for key, old, value in config_differences(saved, config_to_dict(cfg), ("tokenizer",))
    ]
    if differences:
        raise RunDirError(
            "train.tokenizer_from: its tokenizer was made with other settings:\n  " + "\n  ".join(differences)
        )
    if not source.tokenizer_dir.is_dir():
        raise RunDirError(f"train.tokenizer_from: {source.path} has no tokenizer/ yet")


def check_can_init(source: InitSource, cfg: Config, may_differ: Sequence[str] = ()) -> None:
    """The new run's model and tokenizer sections must equal the source run's (but the dotted keys
    `may_differ`), or an error lists each difference."""
    saved = config_to_dict(source.run.load_config())
    differences = [
        f"{key}: {old!r} in {source.run.path}, {value!r} here"
        for key, old, value in config_differences(saved, config_to_dict(cfg), ("model", "tokenizer"))
        if key not in may_differ
    ]
    if differences:
        raise RunDirError(
            "train.init_from: this config does not describe the model it starts from:\n  "
            + "\n  ".join(differences)
            + f"\ncopy the model and tokenizer sections of {source.run.config_file}"
        )
