"""What `s2s train` and `s2s prepare` are asked, checked before torch is imported: the config with its
overrides, its data files, and the run directory's state against the command's mode.

These are the mistakes a person makes most (a typo in the config, a run that already exists, a
resume with nothing to resume); refusing them here answers in a fraction of a second instead of after
the seconds torch takes to import. The plan (`seq2seq.training.training_plan`) takes the request and
runs the probes that need torch; the claim (`seq2seq.training.setup.claim`) checks the run directory
again, under its lock, before the first write.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from seq2seq.config import Config, check_data_files, load_config
from seq2seq.errors import RunDirError
from seq2seq.run.change import Mode
from seq2seq.run.checks import check_run_dir
from seq2seq.run.layout import RunDir
from seq2seq.run.lock import check_free


@dataclass(frozen=True)
class Request:
    """One training command's config, checked, and what it does to the run directory."""

    cfg: Config  # paths absolute, so the saved config works from anywhere
    config_file: Path  # the YAML file given (`--overwrite` must not delete it)
    mode: Mode


def run_mode(resume: bool, overwrite: bool) -> Mode:
    """The mode `s2s train --resume/--overwrite` asks for."""
    if resume and overwrite:
        raise RunDirError("choose one of --resume and --overwrite")
    return "resume" if resume else "overwrite" if overwrite else "new"


def train_request(config_file: Path, overrides: list[str], device: str | None, mode: Mode) -> Request:
    """`s2s train`'s request (`device` overrides train.device), refused now if its config, data files
    or run directory say it would be refused once the run is locked."""
    cfg = checked_config(config_file, [*overrides, *([f"train.device={device}"] if device else [])])
    return checked_request(Request(cfg, config_file, mode))


def prepare_request(config_file: Path, overrides: list[str], overwrite: bool = False) -> Request:
    """`s2s prepare`'s request: a run that has started keeps its tokenizer and must keep its data,
    unless `overwrite` replaces it."""
    cfg = checked_config(config_file, overrides)
    mode: Mode = "overwrite" if overwrite else "resume" if RunDir(cfg.run_dir).started() else "new"
    return checked_request(Request(cfg, config_file, mode))


def checked_request(request: Request) -> Request:
    """The request, unless the claim's checks of its run directory would refuse it (the claim checks
    again, under the run's lock; a run an interrupted command left half changed is settled there)."""
    run = RunDir(request.cfg.run_dir)
    check_free(run)
    if not run.previous_dir.exists():
        check_run_dir(run, request.cfg, request.mode, request.config_file)
    return request


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
