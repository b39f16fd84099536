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
from seq2seq.translate.placement import AUTO, Placement
from seq2seq.translate.scoring import check_score_files, load_scorer, score_stream


@dataclass(frozen=True)
class ScoreJob:
    """What `s2s score` was asked, besides where its lines go."""

    run_dir: Path
    src: Path
    tgt: Path | None = None  # the targets to score, aligned with `src`
    nbest: Path | None = None  # or `s2s translate --nbest` lines for `src`, to re-rank
    reverse: Path | None = None  # a run of the reverse direction: the dual cross-entropy
    tokens: bool = False  # each target token's score too
    tag: str = ""
    to: str = ""  # a multilingual run's target language
    reverse_to: str = ""  # a multilingual reverse run's target language (the language of `src`)
    max_tokens: int | None = None
    checkpoints: tuple[str, ...] = ()
    placement: Placement = AUTO


def score(job: ScoreJob, output: Path | None = None, stdout: TextIO | None = None) -> None:
    """Score JOB's pairs into OUTPUT (None: `stdout`, by default the process's), once every file has
    been checked: aligned, and none of them the output."""
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
    pairs = check_score_files(job.run_dir, job.reverse, job.checkpoints, files, output)  # type: ignore[arg-type]
    scorer = load_scorer(
        job.run_dir, job.reverse, job.checkpoints, job.placement, job.max_tokens, job.tag, job.to,
        job.reverse_to,
    )  # fmt: skip
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(atomic_output(output)) if output else stdout or sys.stdout
        bar = stack.enter_context(tqdm(disable=output is None, unit=" pairs", file=sys.stderr))
        score_stream(scorer, pairs, job.nbest is not None, job.tokens, sink, bar.update)
