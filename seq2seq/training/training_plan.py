"""What `s2s train` and `s2s prepare` will do, decided before anything is written: the plan.

A plan is the command's request (`seq2seq.training.request`: the config checked, its paths absolute,
the mode), and the probes that would otherwise fail an hour into training, run now. Making one reads
files and writes none, on every rank; the run directory is claimed next
(`seq2seq.training.setup.claim`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from seq2seq.checkpoint import InitSource, check_can_init, check_tokenizer_source, init_source
from seq2seq.config import Config, data_files
from seq2seq.config.train import GIVEN, augmented_name
from seq2seq.data.augment import modified_copy
from seq2seq.data.corpora import check_aligned
from seq2seq.data.parallel import read_parallel
from seq2seq.data.prepared import prepared_corpus_dir
from seq2seq.device import autocast_dtype
from seq2seq.files import check_outputs, same_file
from seq2seq.run.change import Mode
from seq2seq.run.layout import RunDir
from seq2seq.run.parts import run_parts
from seq2seq.training.distributed import DistInfo, training_device
from seq2seq.training.request import Request
from seq2seq.training.shrink import LAYER_COUNTS, chosen_layers
from seq2seq.training.tensorboard_log import check_available as check_tensorboard

Paths = dict[str, Path | None]  # what a command reads or writes, by how the user named each


@dataclass(frozen=True)
class RunPlan:
    """One command's plan for one run directory."""

    cfg: Config  # paths absolute, so the saved config works from anywhere
    run: RunDir
    config_file: Path  # the YAML file given (`--overwrite` must not delete it)
    mode: Mode
    init: InitSource | None  # fine-tuning (train.init_from): where the weights come from; not on resume


@dataclass(frozen=True)
class ValidText:
    """One validation set's lines, read (and checked) once, before anything is written."""

    src_path: str
    tgt_path: str
    src: list[str]
    tgt: list[str]
    direction: str = ""  # a multilingual run's: de-en
    tgt_lang: str = ""  # whose token starts the sources


def plan_training(request: Request, info: DistInfo) -> tuple[RunPlan, list[ValidText], torch.device]:
    """`s2s train`'s plan, its validation sets' text, and the device this process trains on (the
    config's train.device; under torchrun, the GPU of `info`'s local rank), resolved here once.

    Fails now, not after the tokenizer or an hour of training: a device or precision this machine
    lacks, tensorboard missing, training files that do not align, unreadable validation files, a
    fine-tuning source that does not fit the config.
    """
    cfg = request.cfg
    train_device = training_device(cfg.train.device, info)
    autocast_dtype(train_device, cfg.train.precision)
    if cfg.train.tensorboard:
        check_tensorboard()
    check_aligned(cfg.data.training_corpora())
    return _plan(request), validation_texts(cfg), train_device


def validation_texts(cfg: Config) -> list[ValidText]:
    """The validation sets read, each named as `TrainConfig.validated` names it; with
    train.valid_augment, each followed by its modified copy."""
    augment = cfg.train.valid_augment
    texts = []
    for v in cfg.data.validation_sets():
        given = ValidText(v.src, v.tgt, *read_parallel(v.src, v.tgt), v.direction, v.tgt_lang)
        if not augment.active:
            texts.append(given)
            continue
        copy = modified_copy(given.src, given.tgt, augment, cfg.train.seed)
        name = augmented_name(v.direction)
        texts += [
            dataclasses.replace(given, direction=v.direction or GIVEN),
            ValidText(f"{v.src} ({name})", f"{v.tgt} ({name})", *copy, name, v.tgt_lang),
        ]
    return texts


def plan_preparation(request: Request, figure: Path | None = None) -> RunPlan:
    """`s2s prepare`'s plan. The `figure` it draws may be none of what it reads or writes."""
    check_aligned(request.cfg.data.training_corpora())
    plan = _plan(request)
    if figure is not None:
        reads, files, folders = run_outputs(plan)
        check_outputs({"--figure": figure}, {**reads, **files, **folders, **run_parts(plan.run)})
    return plan


def _plan(request: Request) -> RunPlan:
    cfg, mode = request.cfg, request.mode
    if cfg.train.tokenizer_from and mode != "resume":
        check_tokenizer_source(cfg)
    init = init_source(cfg) if cfg.train.init_from and mode != "resume" else None
    if init is not None:  # the same model and tokenizer, or the same with fewer layers
        check_can_init(init, cfg, may_differ=[f"model.{key}" for key in LAYER_COUNTS])
        source = init.run.load_config().model
        init = dataclasses.replace(init, layers=chosen_layers(source, cfg, str(init.run.path)))
    plan = RunPlan(cfg, RunDir(cfg.run_dir), request.config_file, mode, init)
    reads, files, folders = run_outputs(plan)
    check_outputs(files, reads, folders)
    return plan


def run_outputs(plan: RunPlan) -> tuple[Paths, Paths, Paths]:
    """What `s2s train` and `s2s prepare` read (the config, the data files, the weights and tokenizer
    a fine-tuned run starts from), and what they write: the run's files, and the folders they write
    into (the tokenizer, the checkpoints, the prepared corpus). The config may be the run's own
    config.yaml (`s2s train RUN/config.yaml --resume`), which is saved again."""
    cfg, run = plan.cfg, plan.run
    reads: Paths = {f"data.{key}": Path(path) for key, path in data_files(cfg).items()}
    if not same_file(plan.config_file, run.config_file):
        reads["the config file"] = plan.config_file
    if cfg.train.tokenizer_from:
        reads["train.tokenizer_from's tokenizer/"] = RunDir(cfg.train.tokenizer_from).tokenizer_dir
    if plan.init is not None:
        reads["train.init_from"] = plan.init.checkpoint
        reads["train.init_from's tokenizer/"] = plan.init.run.tokenizer_dir
    own = (run.config_file, run.inputs_file, run.log_file, run.metrics_file, run.marker_file)
    files: Paths = {f"run_dir's {path.name}": path for path in own}
    prepared = "data.prepared_dir" if cfg.data.prepared_dir else "run_dir's prepared/"
    folders: Paths = {
        "run_dir's tokenizer/": run.tokenizer_dir,
        "run_dir's checkpoints/": run.checkpoint_dir,
        "run_dir's tensorboard/": run.tensorboard_dir,
        prepared: prepared_corpus_dir(cfg),
    }
    return reads, files, folders
