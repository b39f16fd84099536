"""`s2s score`'s work: the model's log-probability of each (source, target) pair, or `s2s translate
--nbest` lists re-ranked by it, one line out per line in."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from seq2seq.commands.jobs import ScoreJob
from seq2seq.config.data import CorpusConfig
from seq2seq.data.corpora import count_pairs
from seq2seq.errors import Seq2SeqError
from seq2seq.files import atomic_output, check_outputs
from seq2seq.run.parts import readable_run_inputs
from seq2seq.translate.direction import Direction


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
    from seq2seq.translate.scoring import load_scorer, score_stream  # torch: after the checks

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


def check_score_files(
    run_dir: Path,
    reverse_dir: Path | None,
    checkpoints: tuple[str, ...],
    files: dict[str, Path],
    output: Path | None,
) -> CorpusConfig:
    """The pairs to score (`files`: --src and --tgt or --nbest), checked to align and not to be the
    output, and the runs found, before any model is loaded (or torch imported)."""
    checkpoints = checkpoints or ("best",)
    inputs = {**files, **readable_run_inputs(run_dir, checkpoints)}
    if reverse_dir is not None:
        inputs |= readable_run_inputs(reverse_dir, ("best",), "--reverse")
    check_outputs({"-o/--output": output}, inputs)
    src, tgt = files.values()
    pairs = CorpusConfig(name="score", src=str(src), tgt=str(tgt))
    count_pairs(pairs)
    return pairs
