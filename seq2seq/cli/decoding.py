"""`s2s translate`, `evaluate`, `score` and `average`: a trained run put to use. Their options are the
fields of the jobs they hand to `seq2seq.commands` (`seq2seq.cli.expansion`)."""

from __future__ import annotations

import logging

from seq2seq.cli.common import Verbose, setup_logging, verbosity
from seq2seq.cli.expansion import verb
from seq2seq.cli.group import commands
from seq2seq.commands.jobs import AverageJob, EvaluateJob, ScoreJob, Streams, TranslateJob

app = commands()
log = logging.getLogger("seq2seq")


@verb(app)
def translate(job: TranslateJob, streams: Streams, verbose: Verbose = False) -> None:
    """Translate source lines with a trained run: exactly one output line per input line, in order.

    From a file into a file, the output is built in OUTPUT.partial, and a run that was interrupted
    continues where it stopped when the same command is given again."""
    from seq2seq.commands.translate import translate as run_translate

    verbosity(verbose)
    run_translate(job, streams.input, streams.output)


@verb(app)
def evaluate(job: EvaluateJob, verbose: Verbose = False) -> None:
    """Score translations with sacreBLEU (BLEU, chrF, TER): given ones (--hyp), or RUN_DIR's of --src.

    A reader's predictions get accuracy and macro-F1 (classify) or token accuracy and span F1 (tag).
    Several --hyp files are compared with sacrebleu's paired bootstrap test against the first.
    """
    from seq2seq.commands.evaluate import evaluate as run_evaluate

    verbosity(verbose)
    run_evaluate(job)


@verb(app)
def score(job: ScoreJob, verbose: Verbose = False) -> None:
    """The model's log-probability of each (source, target) pair: one line out per pair in,
    `total<TAB>per token`; with --reverse, `dual cross-entropy<TAB>H_fwd<TAB>H_rev` (filtering);
    with --nbest, `translate --nbest` lines re-ranked by it."""
    from seq2seq.commands.score import score as run_score

    verbosity(verbose)
    run_score(job)


@verb(app)
def average(job: AverageJob) -> None:
    """Average the weights of the last N numbered checkpoints into one (use with --checkpoint averaged)."""
    from seq2seq.commands.average import average as run_average

    setup_logging(logging.INFO)
    run_average(job)
