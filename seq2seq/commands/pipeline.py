"""`s2s pipeline`'s work: read the pipeline, decide every step's state, then run the steps in order,
each command as its own process (`python -m seq2seq VERB ...`), and print the final table.

Before anything runs, every step's state is read from the workspace (`seq2seq.pipeline.step`): a
step done as asked is skipped, one interrupted continues, one done otherwise is refused, naming each
difference, and then nothing runs at all (`--redo STEP` runs it and the steps after it again).
`--dry-run` prints each step's state and commands and stops there, having written nothing. A step
that runs gets its log in the workspace (`logs/STEP.log`: its commands and all they printed) and,
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
from pathlib import Path

from seq2seq.errors import Seq2SeqError
from seq2seq.locks import lock_or_refuse
from seq2seq.pipeline.config import PipelineConfig, read_pipeline
from seq2seq.pipeline.plan import Plan, make_plan
from seq2seq.pipeline.process import run_logged
from seq2seq.pipeline.records import checksums, disk_bytes, new_record, read_record, write_record
from seq2seq.pipeline.step import Action, Start, Status, Step
from seq2seq.pipeline.table import print_summary, write_table

log = logging.getLogger(__name__)


class PipelineError(Seq2SeqError):
    """A step refused, failed, or not found."""


def run_pipeline(file: Path, dry_run: bool, until: str | None, redo: tuple[str, ...]) -> None:
    cfg = read_pipeline(file)
    plan = make_plan(cfg)
    names = [s.name for s in plan.steps]
    for name in [*redo, *([until] if until else [])]:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise PipelineError(f"{name}: no such step{hint}; the steps: {', '.join(names)}")
    redo_from = min((names.index(n) for n in redo), default=len(names))
    last = names.index(until) if until else len(names) - 1
    statuses = overview(plan, redo_from)
    shown = list(zip(plan.steps, statuses, strict=True))[: last + 1]
    if dry_run:
        print(describe(shown, commands=True), end="")
    refuse(file, shown)
    if dry_run:
        return
    log.info(
        "pipeline %s, workspace %s:\n%s", file, plan.workspace.root, describe(shown, commands=False).rstrip()
    )
    with workspace_lock(plan):
        for i in range(last + 1):
            run_step(cfg, i, len(shown), redo=i >= redo_from)
    print_summary(make_plan(cfg), names[: last + 1])
    if last == len(names) - 1:
        write_table(make_plan(cfg))


def overview(plan: Plan, redo_from: int) -> list[Status]:
    """Every step's state as the workspace stands: after a step that runs, the steps done before are
    decided once it has run (what it makes may be new)."""
    statuses: list[Status] = []
    first_run = first_refused = ""
    for i, step in enumerate(plan.steps):
        status = step.decide(read_record(plan.workspace.root, step.name), i >= redo_from)
        if first_refused:
            status = Status(Action.REFUSE, f"after {first_refused}")
        elif first_run and status.action in (Action.SKIP, Action.REFUSE):
            status = Status(Action.WAIT, f"decided once {first_run} has run")
        first_run = first_run or (step.name if status.action is Action.RUN else "")
        first_refused = first_refused or (step.name if status.action is Action.REFUSE else "")
        statuses.append(status)
    return statuses


def describe(shown: list[tuple[Step, Status]], commands: bool) -> str:
    """One line per step (its state and what it does), and its commands as they would run."""
    width = max(len(step.name) for step, _ in shown)
    lines = []
    for step, status in shown:
        state = {Action.RUN: "to run", Action.WAIT: "to run"}.get(status.action, status.action.value)
        lines.append(f"{step.name:{width}}  {state:7} {step.what} ({status.why})")
        if commands and status.action is not Action.SKIP:
            lines += [f"  {c.starting(status.start).shown()}" for c in step.commands]
    return "".join(line + "\n" for line in lines)


def refuse(file: Path, shown: list[tuple[Step, Status]]) -> None:
    """Refuse the whole pipeline, before it runs anything, when a step was done otherwise."""
    refused = [(step, status) for step, status in shown if status.action is Action.REFUSE]
    if not refused:
        return
    step, status = refused[0]
    after = [s.name for s, _ in refused[1:]]
    raise PipelineError(
        f"step {step.name} was done otherwise than {file} asks now:\n  "
        + "\n  ".join(status.differences)
        + (f"\nthe steps after it depend on it: {', '.join(after)}" if after else "")
        + f"\nto make it again as asked, and the steps after it: s2s pipeline {file} --redo {step.name}"
    )


@contextlib.contextmanager
def workspace_lock(plan: Plan) -> Iterator[None]:
    """One pipeline at a time in a workspace (an OS lock, dropped when this process ends)."""
    path = plan.workspace.lock_file
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        lock_or_refuse(fd, lambda: PipelineError(f"another s2s pipeline is running in {plan.workspace.root}"))
        yield
    finally:
        os.close(fd)


def run_step(cfg: PipelineConfig, index: int, total: int, redo: bool) -> None:
    """Step `index` as the plan stands now (the choices made so far), run unless done."""
    plan = make_plan(cfg)
    step, ws = plan.steps[index], plan.workspace
    status = step.decide(read_record(ws.root, step.name), redo)
    where = f"[{index + 1}/{total}] {step.name}"
    if status.action is Action.SKIP:
        log.info("%s: skipped (%s)", where, status.why)
        return
    if status.action is not Action.RUN:
        refuse(Path(step.name), [(step, status)]) if status.action is Action.REFUSE else None
        raise PipelineError(f"step {step.name} {status.why}: the steps before it did not make it")
    log.info("%s: %s (%s)", where, step.what, status.why)
    started = time.monotonic()
    for path in step.cleared:  # its own earlier result, which its command will not replace
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    step.folder.mkdir(parents=True, exist_ok=True)
    for command in step.commands:
        run_logged(
            command.starting(status.start if status.start is not Start.NEW else Start.NEW),
            ws.log_file(step.name),
        )
    seconds = time.monotonic() - started
    settings = [c.settings for c in step.commands]
    disk = disk_bytes(step.folder)
    write_record(
        ws.root, new_record(step.name, settings, checksums(step.reads), checksums(step.writes), seconds, disk)
    )
    log.info("%s: done in %.1f s, %s on disk", where, seconds, _size(disk))


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n:.0f} TB"
