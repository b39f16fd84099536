"""`s2s pipeline`'s work: read the pipeline, decide every step's state, then run the steps in order,
each command as its own process (`python -m seq2seq VERB ...`), and print the final table.

Before anything runs, the whole file is checked (every training's run config too) and every step's
state is read from the workspace (`seq2seq.pipeline.step`): a step done as asked is skipped, one
interrupted continues, and one done otherwise is refused, naming each difference, together with the
steps after it; then nothing runs at all (`--redo STEP` makes it again, and a step after it is made
again when what it reads changes).
`--dry-run` prints each step's state and commands and stops there, having written nothing. A step
that runs keeps its log in the workspace (`logs/STEP.log`: its commands and all they printed) and,
once every command has succeeded, its record (`records/STEP.json`).
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from seq2seq.errors import Seq2SeqError
from seq2seq.files import lies_in
from seq2seq.locks import lock_or_refuse
from seq2seq.pipeline.config import PipelineConfig, read_pipeline
from seq2seq.pipeline.paths import check_paths, missing
from seq2seq.pipeline.plan import Plan, check_pipeline, make_plan
from seq2seq.pipeline.process import run_logged
from seq2seq.pipeline.records import (
    checksums,
    disk_bytes,
    new_record,
    read_record,
    record_file,
    write_record,
)
from seq2seq.pipeline.step import Action, Status, Step
from seq2seq.pipeline.table import print_summary, size, write_table

log = logging.getLogger(__name__)


class PipelineError(Seq2SeqError):
    """A step refused, failed, or named wrong."""


def run_pipeline(file: Path, dry_run: bool, until: str | None, redo: tuple[str, ...]) -> None:
    cfg = read_pipeline(file)
    check_pipeline(cfg)
    plan = make_plan(cfg)
    check_paths(file, cfg, plan)
    names = [s.name for s in plan.steps]
    check_names(names, until, redo)
    last = names.index(until) if until is not None else len(names) - 1
    statuses = overview(plan, redo)
    choosing = frozenset(
        s.name for s, status in zip(plan.steps, statuses, strict=True) if status.action is not Action.SKIP
    )
    if choosing:  # their choices are to be made (again): their values are not known yet
        plan = make_plan(cfg, choosing)
        statuses = overview(plan, redo)
    shown = list(zip(plan.steps, statuses, strict=True))[: last + 1]
    if dry_run:
        print(describe(shown, commands=True), end="")
    refuse_changed(file, shown)
    if dry_run:
        return
    absent = [*map(str, missing(file, cfg)), *(str(s.missing) for _, s in shown if s.missing is not None)]
    if absent:
        raise PipelineError(f"the pipeline's data is not all there: {', '.join(dict.fromkeys(absent))}")
    log.info("pipeline %s in %s:\n%s", file, plan.workspace.root, describe(shown, commands=False).rstrip())
    with workspace_lock(plan):
        for i in range(last + 1):
            run_step(file, cfg, i, len(shown), redo=names[i] in redo)
    plan = make_plan(cfg)
    print_summary(plan, names[: last + 1])
    if last == len(names) - 1:
        write_table(plan)


def check_names(names: list[str], until: str | None, redo: tuple[str, ...]) -> None:
    """Every step `--until` and `--redo` name is one of the pipeline's (an empty name is none)."""
    asked = [("--redo", name) for name in redo] + ([("--until", until)] if until is not None else [])
    wrong = []
    for option, name in asked:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            wrong.append(f"{option} {name or repr(name)}: no such step{hint}")
    if wrong:
        raise PipelineError("; ".join(wrong) + f"; the steps: {', '.join(names)}")


def overview(plan: Plan, redo: tuple[str, ...]) -> list[Status]:
    """Every step's state as the workspace stands. After a step that runs, a step done before is
    decided once that one has run (what it makes may be new); after a refused one, all are refused
    (a refusal is never caused by an earlier step: what it makes anew makes a step run again). A
    file a step waits for is named with the step that makes it, or as missing when none does."""
    statuses: list[Status] = []
    first_run = first_refused = ""
    for i, step in enumerate(plan.steps):
        status = decide(plan, step, step.name in redo)
        if first_refused:
            status = Status(Action.REFUSE, f"after {first_refused}")
        elif first_run and status.action is Action.SKIP:  # what it reads may be made again first
            status = Status(Action.WAIT, f"after {first_run}")
        elif status.missing is not None:
            maker = next(
                (s.name for s in plan.steps[:i] if any(lies_in(status.missing, w) for w in s.writes)), ""
            )
            why = f"after {maker}" if maker else f"{status.missing} is missing, and no step makes it"
            status = replace(status, why=why, missing=None if maker else status.missing)
        first_run = first_run or (step.name if status.action is Action.RUN else "")
        first_refused = first_refused or (step.name if status.action is Action.REFUSE else "")
        statuses.append(status)
    return statuses


def decide(plan: Plan, step: Step, redo: bool) -> Status:
    """The step's state, from its record unless it is to be made again (a damaged one then too)."""
    return step.decide(
        None if redo else read_record(plan.workspace.root, step.name), redo, plan.workspace.root
    )


def describe(shown: list[tuple[Step, Status]], commands: bool) -> str:
    """A line per step (its state, what it does, why), and the commands of those that will run."""
    width = max(len(step.name) for step, _ in shown)
    states = {Action.RUN: "to run", Action.WAIT: "to run", Action.SKIP: "skip", Action.REFUSE: "refused"}
    lines = []
    for step, status in shown:
        lines.append(f"{step.name:{width}}  {states[status.action]:7}  {step.what} ({status.why})")
        if commands and status.action in (Action.RUN, Action.WAIT):
            lines += [f"  {c.starting(status.start).shown()}" for c in step.commands]
    return "".join(line + "\n" for line in lines)


def refuse_changed(file: Path, shown: list[tuple[Step, Status]]) -> None:
    """Refuse the whole pipeline when a step was done otherwise than asked, naming each difference."""
    refused = [(step, status) for step, status in shown if status.action is Action.REFUSE]
    if not refused:
        return
    step, status = refused[0]
    after = [s.name for s, _ in refused[1:]]
    raise PipelineError(
        f"step {step.name} was done otherwise than {file} asks now:\n  "
        + "\n  ".join(status.differences)
        + (f"\nand the steps after it depend on it: {', '.join(after)}" if after else "")
        + f"\nto make it again as asked now: s2s pipeline {file} --redo {step.name}"
    )


@contextlib.contextmanager
def workspace_lock(plan: Plan) -> Iterator[None]:
    """One pipeline at a time in a workspace (an OS lock, which goes when this process ends)."""
    path = plan.workspace.lock_file
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        lock_or_refuse(fd, lambda: PipelineError(f"another s2s pipeline runs in {plan.workspace.root}"))
        yield
    finally:
        os.close(fd)


def run_step(file: Path, cfg: PipelineConfig, index: int, total: int, redo: bool) -> None:
    """Step `index` as the plan stands now (with the choices made so far): run unless it is done."""
    plan = make_plan(cfg)
    step, ws = plan.steps[index], plan.workspace
    status = decide(plan, step, redo)
    where = f"[{index + 1}/{total}] {step.name}"
    if status.action is Action.SKIP:
        log.info("%s: skipped (%s)", where, status.why)
        return
    refuse_changed(file, [(step, status)])
    if status.action is Action.WAIT:
        raise PipelineError(f"step {step.name} {status.why}, which the steps before it did not make")
    log.info("%s: %s (%s)", where, step.what, status.why)
    started = time.monotonic()
    record_file(ws.root, step.name).unlink(missing_ok=True)  # what it says is about to change
    for path in step.cleared:  # its own result from before, which its command will not replace
        shutil.rmtree(path, ignore_errors=True)
    step.folder.mkdir(parents=True, exist_ok=True)
    for command in step.commands:
        run_logged(command.starting(status.start), ws.log_file(step.name))
    seconds, disk = time.monotonic() - started, disk_bytes(step.folder)
    settings = [c.settings for c in step.commands]
    write_record(
        ws.root, new_record(step.name, settings, checksums(step.reads), checksums(step.writes), seconds, disk)
    )
    log.info("%s: done in %.1f s, %s in %s", where, seconds, size(disk), step.folder)
