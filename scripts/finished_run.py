"""Whether a pipeline script may skip a training: its run finished, with the settings asked for now.

    python -m scripts.finished_run RUN CONFIG [--set KEY=VALUE ...]

Exit 0: RUN finished training (`finished at step` in its train.log) with CONFIG and the overrides;
1: RUN has not finished (absent, or interrupted: train it, or continue it); 2: RUN finished with other
settings, each printed. The scripts' runs are named by role (`student`, `teacher`), so a rerun with
other settings (another MINUTES, STUDENT_INIT=teacher) would otherwise reuse a run trained for
something else and mix it into the table. The run directory itself is not compared, nor the decode
section (the scripts give their decode settings on the command line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seq2seq.config.loading import config_differences, config_to_dict
from seq2seq.errors import Seq2SeqError
from seq2seq.rundir import RunDir
from seq2seq.training.plan import checked_config

FINISHED = "finished at step"
COMPARED = ("data", "tokenizer", "model", "train")


def differences(run: Path, config: Path, overrides: list[str]) -> list[str]:
    """`key: value in RUN, value asked for` for each setting RUN was trained with that differs."""
    asked = config_to_dict(checked_config(config, overrides))
    saved = config_to_dict(RunDir(run).load_config())
    found = config_differences(saved, asked, COMPARED)
    return [f"{key}: {old!r} in {run}, {new!r} asked for" for key, old, new in found]


def finished(run: Path) -> bool:
    log = run / "train.log"
    return log.is_file() and FINISHED in log.read_text(encoding="utf-8", errors="replace")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("config", type=Path)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if not finished(args.run):
        return 1
    try:
        found = differences(args.run, args.config, args.overrides)
    except Seq2SeqError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if found:
        print(
            f"error: {args.run} finished training with other settings than asked for now; give another "
            "RUNS, or remove the run to train it again:\n  " + "\n  ".join(found),
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
