"""`s2s evaluate`'s work once its command line is read: plan, translate --src with the engine the
chooser picks (only when there is something to translate), score, and write the table, the JSON
record and the report."""

from __future__ import annotations

import logging

import typer

from seq2seq.commands.engines import choose_engine
from seq2seq.ct2.export_dir import EXPORT_INFO, read_export_info
from seq2seq.evaluation.augmented import ModifiedSets
from seq2seq.evaluation.metrics import MetricOptions
from seq2seq.evaluation.plan import EvaluateFiles, plan_evaluation, run_evaluation
from seq2seq.evaluation.record import format_table, write_json
from seq2seq.translate.engine import Engine
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement

log = logging.getLogger(__name__)


def evaluate(
    files: EvaluateFiles,
    task: str | None,
    asked: DecodeOverrides,
    placement: Placement,
    engine: str,
    metrics: MetricOptions,
    bootstrap: int,
    source_tokens: tuple[str, str, str] = ("", "", ""),
    augment: tuple[str | None, int] = (None, 1),
) -> None:
    """Evaluate as `files` name; `source_tokens`: --tag, --to and --pivot; `augment`: --augment, --seed."""
    tag, to, pivot = source_tokens
    export = None
    if files.run_dir is not None and (files.run_dir / EXPORT_INFO).is_file():  # an export translates
        export = read_export_info(files.run_dir)[1]
    plan = plan_evaluation(files, task, asked, tag, to, pivot, export, ModifiedSets.parse(*augment))

    def load() -> Engine:
        assert files.run_dir is not None  # translating --src: the plan's rules
        return choose_engine(files.run_dir, engine, asked, placement).engine

    result, translated = run_evaluation(plan, metrics, load, bootstrap)
    typer.echo(format_table(result))
    if files.json_file is not None:
        write_json(result, files.json_file)
    if files.report is not None:
        from seq2seq.evaluation.report import write_report

        log.info("report written to %s", write_report(result, files.report, translated))
