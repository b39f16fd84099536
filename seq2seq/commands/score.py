"""`s2s score`'s work: the model's log-probability of each (source, target) pair, or `s2s translate
--nbest` lists re-ranked by it, one line out per line in."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from seq2seq.errors import Seq2SeqError
from seq2seq.files import atomic_output
from seq2seq.flags import REQUIRED, group, option
from seq2seq.run.layout import RUN_DIR
from seq2seq.translate.direction import STRAIGHT, Direction
from seq2seq.translate.options import BATCH_ONLY, RUN_DEFAULTS, DecodeOverrides
from seq2seq.translate.placement import AUTO, Placement
from seq2seq.translate.scoring import check_score_files, load_scorer, score_stream


@dataclass(frozen=True)
class ScoreJob:
    """What `s2s score` was asked, besides where its lines go."""

    run_dir: Path = RUN_DIR()
    src: Path = option(REQUIRED, "Source lines (plain or .gz/.xz/.bz2/.zst).")
    tgt: Path | None = option(None, "Target lines, aligned with --src.")  # the targets to score
    nbest: Path | None = option(  # or n-best lines for `src`, to re-rank
        None, "`s2s translate --nbest` output for --src: re-rank each line's list."
    )
    reverse: Path | None = option(  # a run of the reverse direction: the dual cross-entropy
        None, "A run of the reverse direction: print the dual conditional cross-entropy (lower = cleaner)."
    )
    tokens: bool = option(False, "Append each target piece's log-probability (and </s>).", "--tokens")
    direction: Direction = group(STRAIGHT, omit=("pivot",))
    reverse_to: str = option(  # a multilingual reverse run's target language (the language of `src`)
        "", "A multilingual --reverse run: the language it translates into (that of --src, e.g. de)."
    )
    asked: DecodeOverrides = group(RUN_DEFAULTS, only=BATCH_ONLY)  # the batch budget, the weights
    placement: Placement = group(AUTO, only=("device", "precision"))
    output: Path | None = option(None, "The scores (default: stdout).", "-o", "--output")


def score(job: ScoreJob, stdout: TextIO | None = None) -> None:
    """Score JOB's pairs into its output (None: `stdout`, by default the process's), once every file
    has been checked: aligned, and none of them the output."""
    output = job.output
    if (job.tgt is None) == (job.nbest is None):
        raise Seq2SeqError(
            "give the targets to score as --tgt FILE, or n-best lists to re-rank as --nbest FILE"
        )
    if job.tokens and (job.reverse is not None or job.nbest is not None):
        raise Seq2SeqError(
            "--tokens prints one direction's token scores of --tgt: leave out --reverse/--nbest"
        )
    targets = {"--tgt": job.tgt} if job.tgt is not None else {"--nbest": job.nbest}
    files = {"--src": job.src, **targets}
    checkpoints = job.asked.checkpoints
    pairs = check_score_files(job.run_dir, job.reverse, checkpoints, files, output)  # type: ignore[arg-type]
    scorer = load_scorer(
        job.run_dir,
        job.reverse,
        checkpoints,
        job.placement,
        job.asked.max_tokens,
        job.direction,
        Direction(job.reverse_to),
    )
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(atomic_output(output)) if output else stdout or sys.stdout
        bar = stack.enter_context(tqdm(disable=output is None, unit=" pairs", file=sys.stderr))
        score_stream(scorer, pairs, job.nbest is not None, job.tokens, sink, bar.update)
