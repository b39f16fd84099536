"""`s2s evaluate`'s work once its command line is read: plan, translate --src with the engine the
chooser picks (only when there is something to translate), score, and write the table, the JSON
record and the report."""

from __future__ import annotations

import logging

from seq2seq.commands.engines import choose_engine
from seq2seq.commands.jobs import EvaluateJob
from seq2seq.ct2.export_dir import EXPORT_INFO, read_export_info
from seq2seq.evaluation.evaluation_plan import plan_evaluation, run_evaluation
from seq2seq.evaluation.modified_sets import ModifiedSets
from seq2seq.evaluation.record import format_table, write_json
from seq2seq.translate.engine import Engine

log = logging.getLogger(__name__)


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
