"""`s2s evaluate`'s work once its command line is read: plan, translate --src with the engine the
chooser picks (only when there is something to translate), score, and write the table, the JSON
record and the report."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from seq2seq.commands.engines import choose_engine
from seq2seq.config.bounds import MAX_BOOTSTRAP, MAX_SEED
from seq2seq.ct2.export_dir import EXPORT_INFO, read_export_info
from seq2seq.evaluation.evaluation_plan import EvaluateFiles, plan_evaluation, run_evaluation
from seq2seq.evaluation.metrics import MetricOptions
from seq2seq.evaluation.modified_sets import ModifiedSets
from seq2seq.evaluation.record import format_table, write_json
from seq2seq.flags import group, option
from seq2seq.translate.direction import STRAIGHT, Direction
from seq2seq.translate.engine import ENGINE, Engine
from seq2seq.translate.options import RUN_DEFAULTS, SEARCH_ONLY, DecodeOverrides
from seq2seq.translate.placement import AUTO, Placement

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvaluateJob:
    """What `s2s evaluate` was asked: its files, how to score, and how RUN_DIR translates --src."""

    files: EvaluateFiles = group(EvaluateFiles())
    metrics: MetricOptions = group(MetricOptions())
    bootstrap: int = option(
        1000,
        "Paired bootstrap resamples when comparing systems.",
        between=(1, MAX_BOOTSTRAP),
        why="sacrebleu holds resamples x lines in memory",
    )
    augment: str | None = option(
        None, "Also score --src modified: upper,title,typos,nopunct (comma-separated)."
    )
    seed: int = option(1, "Seed of --augment.", between=(0, MAX_SEED))
    task: str | None = option(
        None,
        "translate (BLEU, chrF, TER), classify (accuracy, macro-F1) or tag (token accuracy, span F1) "
        "[default: RUN_DIR's model.task, else translate].",
    )
    asked: DecodeOverrides = group(RUN_DEFAULTS, omit=SEARCH_ONLY)
    placement: Placement = group(AUTO, omit=("threads",))
    engine: str = ENGINE()
    direction: Direction = group(STRAIGHT)


def evaluate(job: EvaluateJob) -> None:
    """Evaluate as JOB asks: plan, translate --src (if asked), score, write the table and files."""
    files, asked = job.files, job.asked
    export = None
    if files.run_dir is not None and (files.run_dir / EXPORT_INFO).is_file():  # an export translates
        export = read_export_info(files.run_dir)[1]
    augment = ModifiedSets.parse(job.augment, job.seed)
    plan = plan_evaluation(files, job.task, asked, job.direction, export, augment)

    def load() -> Engine:
        assert files.run_dir is not None  # translating --src: the plan's rules
        return choose_engine(files.run_dir, job.engine, asked, job.placement).engine

    result, translated = run_evaluation(plan, job.metrics, load, job.bootstrap)
    print(format_table(result))
    if files.json_file is not None:
        write_json(result, files.json_file)
    if files.report is not None:
        from seq2seq.evaluation.report import write_report

        log.info("report written to %s", write_report(result, files.report, translated))
