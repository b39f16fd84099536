"""What a pipeline delivers: the final model exported to CTranslate2, and every model scored on the
test sets.

`export`: the student (or the teacher, when there is no student) at its chosen checkpoint, as
`s2s export` writes it (int8 by default, a lexical shortlist when asked). `evaluate`: each model
(the teacher or its ensemble, the student, the export) translates each test set with its choice
from val and is scored (`s2s evaluate`: BLEU, chrF and TER with their signatures, and its
sentences per second: all in one step, one after the other). `seq2seq.pipeline.table` reads the
records into the final table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seq2seq.pipeline.choice import Decoder
from seq2seq.pipeline.command import Command, Verb
from seq2seq.pipeline.config import ExportStep, PipelineConfig
from seq2seq.pipeline.step import Outputs, Step
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
    shortlist = ("--shortlist", str(export.shortlist)) if export.shortlist else ()
    args = (
        str(model.runs[0]), str(ws.export), "--checkpoint", model.checkpoints[0],
        "--quantize", export.quantize, *shortlist,
    )  # fmt: skip
    what = f"export the {model.name} to CTranslate2 ({export.quantize}" + (
        f", shortlist {export.shortlist})" if export.shortlist else ")"
    )
    return Step(
        "export", what, (Command(Verb.EXPORT, args),), model.reads, (ws.export,), Outputs(), ws.export,
        model.pending, cleared=(ws.export,),
    )  # fmt: skip


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
        model = (
            (str(ws.export), "--engine", "ctranslate2", "--beam", str(one.decoder.beam),
             "--length-penalty", one.decoder.length_penalty)
            if one.exported
            else (*one.decoder.args(), "--engine", cfg.engine)
        )  # fmt: skip
        files = ("--src", test.src, "--ref", test.tgt, "--out", str(one.record.with_suffix(".hyp")))
        commands.append(Command(Verb.EVALUATE, (*model, *files, "--json", str(one.record))))
    reads = [Path(p) for t in cfg.data.test for p in (t.src, t.tgt)]
    reads += [p for m in models for p in m.reads] + ([ws.export] if exported is not None else [])
    pending = next((m.pending for m in models if m.pending), "")
    folder = ws.folder("evaluate")
    what = f"score every model on {', '.join(tests)}"
    return Step(
        "evaluate", what, tuple(commands), tuple(dict.fromkeys(reads)), (folder,), Outputs(), folder, pending
    )
