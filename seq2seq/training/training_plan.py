"""What `s2s train` and `s2s prepare` will do, decided before anything is written: the plan.

A plan is the config loaded and checked, its paths made absolute, the probes that would otherwise fail
an hour into training run now, and the command's mode. Making one reads files and writes none, on
every rank; the run directory is claimed next (`seq2seq.training.setup.claim`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from seq2seq.checkpoint import InitSource, check_can_init, check_tokenizer_source, init_source
from seq2seq.config import Config, check_data_files, data_files, load_config
from seq2seq.config.train import GIVEN, augmented_name
from seq2seq.data.augment import modified_copy
from seq2seq.data.corpora import check_aligned
from seq2seq.data.parallel import read_parallel
from seq2seq.data.prepared import prepared_corpus_dir
from seq2seq.device import autocast_dtype
from seq2seq.errors import RunDirError
from seq2seq.files import check_outputs, same_file
from seq2seq.run.change import Mode
from seq2seq.run.layout import RunDir
from seq2seq.run.parts import run_parts
from seq2seq.training.distributed import DistInfo, training_device
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


def run_mode(resume: bool, overwrite: bool) -> Mode:
    """The mode `s2s train --resume/--overwrite` asks for."""
    if resume and overwrite:
        raise RunDirError("choose one of --resume and --overwrite")
    return "resume" if resume else "overwrite" if overwrite else "new"


def plan_training(
    config_file: Path, overrides: list[str], device: str | None, mode: Mode, info: DistInfo
) -> tuple[RunPlan, list[ValidText], torch.device]:
    """`s2s train`'s plan, its validation sets' text, and the device this process trains on (`device`
    overrides train.device; under torchrun, the GPU of `info`'s local rank), resolved here once.

    Fails now, not after the tokenizer or an hour of training: a device or precision this machine
    lacks, tensorboard missing, training files that do not align, unreadable validation files, a
    fine-tuning source that does not fit the config.
    """
    cfg = checked_config(config_file, [*overrides, *([f"train.device={device}"] if device else [])])
    train_device = training_device(cfg.train.device, info)
    autocast_dtype(train_device, cfg.train.precision)
    if cfg.train.tensorboard:
        check_tensorboard()
    check_aligned(cfg.data.training_corpora())
    return _plan(cfg, config_file, mode), validation_texts(cfg), train_device


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


def plan_preparation(
    config_file: Path, overrides: list[str], overwrite: bool = False, figure: Path | None = None
) -> RunPlan:
    """`s2s prepare`'s plan: a run that has started keeps its tokenizer and must keep its data, unless
    `overwrite` replaces it (with the tokenizer and the prepared corpus, which `s2s train` then uses).
    The `figure` it draws may be none of what it reads or writes."""
    cfg = checked_config(config_file, overrides)
    check_aligned(cfg.data.training_corpora())
    mode: Mode = "overwrite" if overwrite else "resume" if RunDir(cfg.run_dir).started() else "new"
    plan = _plan(cfg, config_file, mode)
    if figure is not None:
        reads, files, folders = run_outputs(plan)
        check_outputs({"--figure": figure}, {**reads, **files, **folders, **run_parts(plan.run)})
    return plan


def checked_config(config_file: Path, overrides: list[str]) -> Config:
    """The config with `--set` overrides, its data files present, its paths absolute."""
    cfg = load_config(config_file, overrides)
    check_data_files(cfg)
    return resolve_paths(cfg)


def resolve_paths(cfg: Config) -> Config:
    """Data paths (and `train.init_from`) as absolute paths, so the saved config works from anywhere."""
    data = cfg.data

    def absolute(path: str) -> str:
        return str(Path(path).resolve()) if path else ""

    return dataclasses.replace(
        cfg,
        data=dataclasses.replace(
            data,
            train_src=tuple(map(absolute, data.train_src)),
            train_tgt=tuple(map(absolute, data.train_tgt)),
            corpora=tuple(
                dataclasses.replace(c, src=absolute(c.src), tgt=absolute(c.tgt), tsv=absolute(c.tsv))
                for c in data.corpora
            ),
            valid_src=absolute(data.valid_src),
            valid_tgt=absolute(data.valid_tgt),
            valid=tuple(dataclasses.replace(v, src=absolute(v.src), tgt=absolute(v.tgt)) for v in data.valid),
            prepared_dir=absolute(data.prepared_dir),
        ),
        train=dataclasses.replace(
            cfg.train,
            init_from=absolute(cfg.train.init_from),
            tokenizer_from=absolute(cfg.train.tokenizer_from),
        ),
    )


def _plan(cfg: Config, config_file: Path, mode: Mode) -> RunPlan:
    if cfg.train.tokenizer_from and mode != "resume":
        check_tokenizer_source(cfg)
    init = init_source(cfg) if cfg.train.init_from and mode != "resume" else None
    if init is not None:  # the same model and tokenizer, or the same with fewer layers
        check_can_init(init, cfg, may_differ=[f"model.{key}" for key in LAYER_COUNTS])
        source = init.run.load_config().model
        init = dataclasses.replace(init, layers=chosen_layers(source, cfg, str(init.run.path)))
    plan = RunPlan(cfg, RunDir(cfg.run_dir), config_file, mode, init)
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
