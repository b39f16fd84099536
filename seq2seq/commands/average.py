"""`s2s average`'s work: the weights of a run's latest numbered checkpoints averaged into one."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from seq2seq.checkpoint import average_checkpoints
from seq2seq.data.tokenizer import tokenizer_checksums
from seq2seq.flags import option
from seq2seq.run.layout import RUN_DIR, RunDir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AverageJob:
    """Which checkpoints of which run `s2s average` averages, and where the result goes."""

    run_dir: Path = RUN_DIR()
    last: int | None = option(
        None, "How many of the latest numbered checkpoints to average [default: all kept].", between=(1, None)
    )
    output: str = option("averaged", "Name in checkpoints/ (or a path) for the result.")


def average(job: AverageJob) -> Path:
    """Average JOB's checkpoints; returns where the average was written."""
    run = RunDir(job.run_dir)
    sums = tokenizer_checksums(run.tokenizer_dir, run.load_config().tokenizer.joint)
    path, used = average_checkpoints(run, sums, job.last, job.output)
    log.info("averaged %s into %s", ", ".join(p.name for p in used), path)
    return path
