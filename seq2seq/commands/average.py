"""`s2s average`'s work: the weights of a run's latest numbered checkpoints averaged into one."""

from __future__ import annotations

import logging
from pathlib import Path

from seq2seq.commands.jobs import AverageJob
from seq2seq.run.layout import RunDir

log = logging.getLogger(__name__)


def average(job: AverageJob) -> Path:
    """Average JOB's checkpoints; returns where the average was written."""
    from seq2seq.data.tokenizer import tokenizer_checksums
    from seq2seq.run.averaging import average_checkpoints  # here: `s2s --help` loads no torch

    run = RunDir(job.run_dir)
    sums = tokenizer_checksums(run.tokenizer_dir, run.load_config().tokenizer.joint)
    path, used = average_checkpoints(run, sums, job.last, job.output)
    log.info("averaged %s into %s", ", ".join(p.name for p in used), path)
    return path
