"""A pipeline script's training step: train RUN once, with the settings asked for now.

    python -m scripts.train_once CONFIG RUN [--set KEY=VALUE ...]

RUN finished training (its record says so: `seq2seq.run.finished`) with CONFIG and the overrides:
skipped.
RUN finished with other settings: refused, `error:` naming each (exit 2). The scripts' runs are named
by role (`student`, `de_en`), so a rerun with other settings (another MINUTES, STUDENT_INIT=teacher)
would otherwise reuse a run trained for something else and mix it into the table. The run directory
itself is not compared, nor the decode section (the scripts give their decode settings on the
command line). Otherwise this becomes `s2s train CONFIG --set run_dir=RUN ...`: with `--resume` when
RUN was interrupted after a checkpoint (or finished before s2s recorded it: resuming records it),
`--overwrite` when RUN holds anything else, so a killed script continues where it stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from seq2seq.config.loading import config_differences, config_to_dict
from seq2seq.errors import RunDirError, Seq2SeqError
from seq2seq.run.checks import COMPATIBLE_SECTIONS
from seq2seq.run.finished import read_finished
from seq2seq.run.layout import RunDir
from seq2seq.training.plan import checked_config

COMPARED = (*COMPATIBLE_SECTIONS, "train")  # what resuming requires, and how the run was trained


def train_command(config: Path, run: Path, overrides: list[str]) -> list[str] | None:
    """The `s2s train` command that trains RUN, or None when it finished with these settings; a run
    finished with others raises RunDirError naming each setting."""
    overrides = [f"run_dir={run}", *overrides]
    if read_finished(RunDir(run)) is not None:
        asked = config_to_dict(checked_config(config, overrides))
        saved = config_to_dict(RunDir(run).load_config())
        found = [
            f"{key}: {old!r} in {run}, {new!r} asked for"
            for key, old, new in config_differences(saved, asked, COMPARED)
        ]
        if not found:
            return None
        raise RunDirError(
            f"{run} finished training with other settings than asked for now; give another RUNS, or "
            "remove the run to train it again:\n  " + "\n  ".join(found)
        )
    command = ["s2s", "train", str(config), *(arg for value in overrides for arg in ("--set", value))]
    if (run / "checkpoints" / "last.pt").is_file():
        return [*command, "--resume"]
    if run.exists():
        return [*command, "--overwrite"]
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("run", type=Path)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        command = train_command(args.config, args.run, args.overrides)
    except Seq2SeqError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if command is not None:
        os.execvp(command[0], command)  # the training itself, its exit status and its Ctrl-C
    return 0


if __name__ == "__main__":
    sys.exit(main())
