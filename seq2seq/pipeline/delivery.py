"""What a pipeline delivers: the final model exported to CTranslate2, and every model scored on the
test sets.

`export`: the student (or the teacher, when there is no student) at its chosen checkpoint, as
`s2s export` writes it (int8 by default, a lexical shortlist when asked), val's beam and length
penalty its decode defaults. `evaluate`: each model (the teacher or its ensemble, the student, the
export) translates each test set with its choice from val (the export with its own defaults, as a
user's `s2s translate EXPORT` would) and is scored (`s2s evaluate`: BLEU, chrF and TER with their
signatures, and its sentences per second: all in one step, one after the other).
`seq2seq.pipeline.table` reads the records into the final table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from seq2seq.commands.jobs import EvaluateJob, ExportJob
from seq2seq.evaluation.evaluate_files import EvaluateFiles
from seq2seq.flags import argv
from seq2seq.pipeline.command import Command, Verb
from seq2seq.pipeline.config import ExportStep, PipelineConfig
from seq2seq.pipeline.step import Outputs, Step
from seq2seq.pipeline.val_choice import Decoder
from seq2seq.pipeline.workspace import Workspace

EXPORTED = "export"  # the export's name in the table


@dataclass(frozen=True)
class Scored:
    """One model's evaluation of one test set: where its record lies and what the model is."""

    model: str  # teacher, student, export
    test: str
    record: Path
    decoder: Decoder  # the model (for an export: the run it was made from, at its choice)
    exported: bool = False


def export_step(ws: Workspace, export: ExportStep, model: Decoder) -> Step:
    job = ExportJob(
        model.runs[0],
        ws.export,
        checkpoint=model.checkpoints[0],
        quantize=export.quantize,
        shortlist=export.shortlist,
        beam=model.beam,  # val's choice: the export's decode defaults
        length_penalty=model.length_penalty,
    )
    what = f"export the {model.name} to CTranslate2 ({export.quantize}" + (
        f", shortlist {export.shortlist})" if export.shortlist else ")"
    )
    command = Command(Verb.EXPORT, argv(job, model.holes))
    return Step(
        "export",
        what,
        (command,),
        model.reads,
        (ws.export,),
        Outputs(),
        ws.export,
        model.pending,
        cleared=(ws.export,),
    )


def scored(
    cfg: PipelineConfig, ws: Workspace, models: list[Decoder], exported: Decoder | None
) -> list[Scored]:
    """Every (model, test set) the evaluation scores, in the table's order."""
    found = [Scored(m.name, t.name, ws.evaluation(m.name, t.name), m) for m in models for t in cfg.data.test]
    if exported is not None:
        found += [
            Scored(EXPORTED, t.name, ws.evaluation(EXPORTED, t.name), exported, True) for t in cfg.data.test
        ]
    return found


def evaluate_step(
    cfg: PipelineConfig, ws: Workspace, models: list[Decoder], exported: Decoder | None
) -> Step:
    tests = {t.name: t for t in cfg.data.test}
    commands = []
    for one in scored(cfg, ws, models, exported):
        test = tests[one.test]
        out = one.record.with_suffix(".hyp")
        files = EvaluateFiles(src=Path(test.src), refs=(Path(test.tgt),), out=out, json_file=one.record)
        if one.exported:  # as `s2s translate EXPORT` decodes: with the defaults val chose
            job = EvaluateJob(dataclasses.replace(files, run_dir=ws.export), engine="ctranslate2")
        else:
            run = dataclasses.replace(files, run_dir=one.decoder.runs[0])
            job = EvaluateJob(run, asked=one.decoder.asked, engine=cfg.engine)
        commands.append(Command(Verb.EVALUATE, argv(job, one.decoder.holes)))
    reads = [Path(p) for t in cfg.data.test for p in (t.src, t.tgt)]
    reads += [p for m in models for p in m.reads] + ([ws.export] if exported is not None else [])
    pending = next((m.pending for m in models if m.pending), "")
    folder = ws.folder("evaluate")
    what = f"score every model on {', '.join(tests)}"
    return Step(
        "evaluate", what, tuple(commands), tuple(dict.fromkeys(reads)), (folder,), Outputs(), folder, pending
    )
