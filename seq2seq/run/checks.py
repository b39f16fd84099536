"""Whether a command may use a run directory: its state against the command's mode, its config
against the run's, and the files the run was made from against today's."""

from __future__ import annotations

from pathlib import Path

from seq2seq.config import Config, config_differences, config_to_dict, data_files
from seq2seq.errors import RunDirError
from seq2seq.files import file_sha256, same_file
from seq2seq.run.change import Mode
from seq2seq.run.layout import RunDir

COMPATIBLE_SECTIONS = ("data", "tokenizer", "model")


def check_run_dir(run: RunDir, cfg: Config, mode: Mode, config_file: Path) -> None:
    """Check the run directory's state against the command's mode; writes nothing.

    Call with the run locked (`seq2seq.run.lock`), or before, to refuse early (a directory that does
    not exist yet is an empty one). A new run needs an empty (or tokenizer-only) directory;
    `overwrite` may replace (`seq2seq.run.change`) an existing run, unless that would delete one of the
    command's inputs; `resume` needs last.pt and the same data, tokenizer and model config.
    """
    started = run.checkpoint_dir.is_dir() and any(run.checkpoint_dir.iterdir()) or run.metrics_file.exists()
    has_content = run.path.is_dir() and any(p.name != run.marker_file.name for p in run.path.iterdir())
    if mode == "resume":
        if not (run.checkpoint_dir / "last.pt").is_file():
            raise RunDirError(
                f"nothing to resume in {run.path} (no checkpoints/last.pt); start without --resume"
            )
        check_compatible(run.load_config(), cfg, run)
    elif has_content:
        if mode == "overwrite":
            _check_nothing_read_inside(run, cfg, config_file)
        elif started:
            raise RunDirError(
                f"{run.path} already holds a training run; "
                "use --resume to continue it or --overwrite to start over"
            )
        elif run.config_file.is_file():  # only a tokenizer stage ran here: keep it if settings match
            check_compatible(run.load_config(), cfg, run)


def _check_nothing_read_inside(run: RunDir, cfg: Config, config_file: Path) -> None:
    """`--overwrite` deletes the old run once the new one starts: refuse when a file the command reads
    lies inside it."""
    root = run.path.resolve()
    init = {"train.init_from": Path(cfg.train.init_from)} if cfg.train.init_from else {}
    reads = {"the config file": config_file, **init} | {
        f"data.{key}": Path(path) for key, path in data_files(cfg).items()
    }
    for label, path in reads.items():
        inside = path.resolve() == root or root in path.resolve().parents
        if inside and not same_file(path, run.config_file):
            raise RunDirError(
                f"--overwrite would delete {label} {path}, which lies inside run_dir {run.path}; "
                "move it out first"
            )


def check_compatible(saved: Config, new: Config, run: RunDir) -> None:
    """The data, tokenizer and model sections of `new` equal the run's, or an error lists each change."""
    differences = config_differences(config_to_dict(saved), config_to_dict(new), COMPATIBLE_SECTIONS)
    changed = [f"{key}: {old!r} -> {value!r}" for key, old, value in differences]
    if changed:
        raise RunDirError(
            f"the config no longer matches the run in {run.path}:\n  "
            + "\n  ".join(changed)
            + "\nrestore these values, or start a new run with --overwrite"
        )


def data_checksums(cfg: Config) -> dict[str, str]:
    """sha256 of each data file, keyed as `config.data_files` keys them."""
    return {key: file_sha256(Path(path)) for key, path in data_files(cfg).items()}


def check_same_inputs(what: str, recorded: dict[str, str], now: dict[str, str], where: str) -> None:
    """Refuse when a recorded checksum differs from the file's today, listing every file changed or
    missing (a recorded name `now` has no checksum of)."""
    changed = [
        f"{name}: {'changed' if name in now else 'missing'} since {where}"
        for name in sorted(recorded)
        if now.get(name) != recorded[name]
    ]
    if changed:
        raise RunDirError(f"the {what} no longer matches {where}:\n  " + "\n  ".join(changed))
