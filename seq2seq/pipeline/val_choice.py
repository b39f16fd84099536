"""The choice on val: which checkpoint and length penalty each model decodes with (and whether the
reverse or right-to-left model reranks the teacher's beam), and the model it makes (`Decoder`), which
later steps translate, score, export and evaluate with.

A choice step (`select_teacher`, `select_student`) averages each run's kept checkpoints when asked
(`s2s average`), translates the validation set with every candidate (`s2s evaluate`: each checkpoint
named, the same for every member of an ensemble, with each length penalty, at the step's beam or, for
the student, at each of `student.beams`; for the teacher, each of those also with its beam reranked
(`--rerank`) at each of `select.rerank_weights`, by the right-to-left model or else the backward model,
and with `select.backward_weights` by the backward model beside the right-to-left one at each pair of
weights: `rerankers`) and keeps the best BLEU (`s2s select`), or for the student the cheapest
candidate `student.within` of it, recorded in its selection.json. Until that file is there, a model's
checkpoints and length penalty are placeholders naming the step (`{select_teacher.checkpoint}`) and
the steps that decode with it wait for it.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path

from seq2seq.commands.jobs import AverageJob, EvaluateJob, TranslateJob
from seq2seq.evaluation.evaluate_files import EvaluateFiles
from seq2seq.evaluation.selection import SelectJob, read_selection
from seq2seq.flags import argv
from seq2seq.pipeline.command import Command, Verb
from seq2seq.pipeline.config import PipelineConfig
from seq2seq.pipeline.step import Outputs, Step
from seq2seq.pipeline.workspace import Workspace
from seq2seq.run.layout import RunDir
from seq2seq.translate.options import DecodeOverrides


@dataclass(frozen=True)
class Decoder:
    """A model as a step decodes with it: its runs (several: an ensemble), checkpoint files, beam,
    length penalty and the runs that rerank its beam (none: it decodes alone); `pending` names the
    choice step it waits for ("" once chosen), and until then its checkpoints are placeholders, its
    length penalty None, its beam None where val chooses among several, and `rerank` the runs it may
    rerank with."""

    name: str  # teacher, student: what the table calls it
    runs: tuple[Path, ...]
    checkpoints: tuple[str, ...]
    beam: int | None
    length_penalty: float | None
    selection: Path  # where the choice is recorded
    pending: str = ""
    val_bleu: float | None = None
    rerank: tuple[str, ...] = ()
    rerank_weight: tuple[float, ...] = ()  # one per run of `rerank`; none while val has yet to choose

    @property
    def asked(self) -> DecodeOverrides:
        """How it decodes: its checkpoints, beam, length penalty and reranking."""
        return DecodeOverrides(
            beam=self.beam,
            length_penalty=self.length_penalty,
            checkpoints=self.checkpoints,
            rerank=self.rerank,
            rerank_weight=self.rerank_weight,
        )

    @property
    def holes(self) -> dict[str, str]:
        """What its command lines show for what its choice has yet to say (`flags.argv`): the
        reranking's weight, where it may rerank (the flags are left out if the choice does not)."""
        if not self.pending:
            return {}
        weight = {"rerank_weight": f"{{{self.pending}.rerank_weight}}"} if self.rerank else {}
        beam = {"beam": f"{{{self.pending}.beam}}"} if self.beam is None else {}
        return {**beam, "length_penalty": f"{{{self.pending}.length_penalty}}", **weight}

    def translating(self, engine: str, run: Path | None = None) -> TranslateJob:
        """Its translation with `engine` (of `run`, an export of it, if given)."""
        return TranslateJob(run or self.runs[0], self.asked, engine=engine)

    @property
    def reads(self) -> tuple[Path, ...]:
        """What its translations follow from: the choice, and the trainings (their records)."""
        reranking = (RunDir(Path(run)).finished_file for run in self.rerank)
        return (self.selection, *(RunDir(r).finished_file for r in self.runs), *reranking)


def rerankers(cfg: PipelineConfig, ws: Workspace, name: str) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """Each run that may rerank the model `name`'s beam, with the weights val tries it at (none but
    the teacher's, and the teacher's only when `select.rerank_weights` asks): the right-to-left model
    where the pipeline trains one, else the backward model, and with `select.backward_weights` the
    backward model beside the right-to-left one."""
    select = cfg.steps.select
    if name != "teacher" or not select.rerank_weights:
        return ()
    first = "right_to_left" if cfg.steps.right_to_left is not None else "backward"
    second = ((str(ws.folder("backward")), select.backward_weights),) if select.backward_weights else ()
    return ((str(ws.folder(first)), select.rerank_weights), *second)


def beams(cfg: PipelineConfig, name: str) -> tuple[int, ...]:
    """The beams val tries for the model `name`: the student's own where it names them, else the
    select step's one."""
    student = cfg.steps.student
    return student.beams if name == "student" and student and student.beams else (cfg.steps.select.beam,)


def within(cfg: PipelineConfig, name: str) -> float:
    """How much val BLEU the model `name` may give up for a cheaper search (the student's own)."""
    return cfg.steps.student.within if name == "student" and cfg.steps.student else 0.0


def chosen(
    cfg: PipelineConfig, ws: Workspace, name: str, runs: tuple[Path, ...], unchosen: frozenset[str]
) -> Decoder:
    """The model `name` of `runs` as its choice step chose it, or with placeholders until it has (or
    while it is to choose again: in `unchosen`)."""
    select = f"select_{name}"
    path = ws.selection(select)
    if not path.is_file() or select in unchosen:
        numbered = [f".{i + 1}" for i in range(len(runs))] if len(runs) > 1 else [""]
        holes = tuple(f"{{{select}.checkpoint{n}}}" for n in numbered)
        tried = beams(cfg, name)
        beam = tried[0] if len(tried) == 1 else None
        may = tuple(run for run, _ in rerankers(cfg, ws, name))
        return Decoder(name, runs, holes, beam, None, path, select, rerank=may)
    choice = read_selection(path)
    return Decoder(
        name,
        runs,
        choice.checkpoints,
        choice.beam,
        choice.length_penalty,
        path,
        "",
        choice.val_bleu,
        choice.rerank,
        choice.rerank_weight,
    )


def select_step(cfg: PipelineConfig, ws: Workspace, name: str, runs: tuple[Path, ...]) -> Step:
    """`select_NAME`: every candidate of the runs translated and scored on val, the best chosen."""
    step, select, valid = f"select_{name}", cfg.steps.select, cfg.data.valid
    judges = rerankers(cfg, ws, name)
    commands: list[Command] = []
    if "averaged" in select.checkpoints:
        commands += [Command(Verb.AVERAGE, argv(AverageJob(run, output="averaged"))) for run in runs]
    records: list[Path] = []
    tried = beams(cfg, name)
    for checkpoint, beam in itertools.product(select.checkpoints, tried):
        files = tuple(str(RunDir(run).checkpoint_file(checkpoint)) for run in runs)
        for penalty, *weights in itertools.product(select.length_penalties, *((0, *w) for _, w in judges)):
            record = ws.candidate(step, checkpoint, penalty, tuple(weights), beam if len(tried) > 1 else 0)
            records.append(record)
            scored = EvaluateFiles(runs[0], src=Path(valid.src), refs=(Path(valid.tgt),))
            reranking = [(run, w) for (run, _), w in zip(judges, weights, strict=True) if w]
            asked = DecodeOverrides(
                beam=beam,
                length_penalty=penalty,
                checkpoints=files,
                rerank=tuple(run for run, _ in reranking),
                rerank_weight=tuple(w for _, w in reranking),
            )
            job = EvaluateJob(
                dataclasses.replace(scored, out=record.with_suffix(".hyp"), json_file=record),
                asked=asked,
                engine=cfg.engine,
            )
            commands.append(Command(Verb.EVALUATE, argv(job)))
    chooses = SelectJob(tuple(records), ws.selection(step), within(cfg, name))
    commands.append(Command(Verb.SELECT, argv(chooses)))
    judging = (RunDir(Path(run)).finished_file for run, _ in judges)
    reads = (Path(valid.src), Path(valid.tgt), *(RunDir(r).finished_file for r in runs), *judging)
    averaged = tuple(RunDir(r).checkpoint_file("averaged") for r in runs if "averaged" in select.checkpoints)
    chosen_too = " and reranking" * bool(judges) + " and beam" * (len(tried) > 1)
    what = f"choose the {name}'s checkpoint, length penalty{chosen_too} on {valid.src}"
    folder = ws.folder(step)
    return Step(step, what, tuple(commands), reads, (folder, *averaged), Outputs(), folder)
