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
    from seq2seq.run.average_choice import averaged_checkpoints

    run = RunDir(job.run_dir)
    cfg = run.load_config()  # a wrong path fails here, saying so
    used, path = averaged_checkpoints(run, job.last, job.output)
    sums = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
    from seq2seq.run.averaging import average_checkpoints  # torch: after the checks

    average_checkpoints(cfg, sums, used, path)
    log.info("averaged %s into %s", ", ".join(p.name for p in used), path)
    return path
