"""One s2s command line of a pipeline step: what it runs, as a person can run it elsewhere.

A step's commands are its settings: a record keeps them (`seq2seq.pipeline.records`), and a step
whose commands changed since is refused with `differences`, which names each option that changed. A
command's `mode` arguments (`--resume`, `--overwrite`, `--restart`) say how a run continues or starts
again; they are not settings, so they are shown and run but never recorded or compared.
"""

from __future__ import annotations

import dataclasses
import shlex
import sys
from dataclasses import dataclass
from enum import Enum

from seq2seq.flags import switch
from seq2seq.training.jobs import ConfigArgs

SET = switch(ConfigArgs, "overrides")  # `--set KEY=VALUE`: each key its own setting


class Verb(str, Enum):
    """The s2s commands a pipeline step runs (`s2s translate` here names a command, not a task)."""

    TRAIN = "train"
    TRANSLATE = "translate"
    SCORE = "score"
    FILTER = "filter"
    AVERAGE = "average"
    EVALUATE = "evaluate"
    SELECT = "select"
    EXPORT = "export"


class Start(Enum):
    """How a step's commands start."""

    NEW = "new"  # nothing of the step is there yet
    CONTINUE = "continue"  # an interrupted step goes on where it stopped
    AGAIN = "again"  # what it made before is replaced (--redo; a training stopped before a checkpoint)


@dataclass(frozen=True)
class Command:
    """`python -m seq2seq VERB ARGS` (or `LAUNCHER -m seq2seq ...`: torchrun), plus its mode."""

    verb: Verb
    args: tuple[str, ...]
    launcher: tuple[str, ...] = ()  # what runs `-m seq2seq` instead of python (a training's torchrun)
    resume: tuple[str, ...] = ()  # the mode that continues it (`train --resume`)
    again: tuple[
        str, ...
    ] = ()  # the mode that replaces what it made (`train --overwrite`, `translate --restart`)
    mode: tuple[str, ...] = ()  # the mode it runs with: how it starts, not what it makes

    def starting(self, start: Start) -> Command:
        """This command as it starts `start`."""
        mode = {Start.NEW: (), Start.CONTINUE: self.resume, Start.AGAIN: self.again}[start]
        return dataclasses.replace(self, mode=mode)

    @property
    def settings(self) -> list[str]:
        """What the command makes its result from: the verb and arguments, not the mode or launcher."""
        return [self.verb.value, *self.args]

    def argv(self) -> list[str]:
        """The process to start: this Python unless a launcher is named."""
        return [*(self.launcher or (sys.executable,)), "-m", "seq2seq", *self.settings, *self.mode]

    def shown(self) -> str:
        """The command line as a person types it (`python` for this Python)."""
        return shlex.join([*(self.launcher or ("python",)), "-m", "seq2seq", *self.settings, *self.mode])


def differences(before: list[str], now: list[str]) -> list[str]:
    """How the command `before` (settings, as recorded) differs from `now`, option by option:
    `--beam: 5 -> 4`, `--set train.max_steps: 20 -> 30`, `--sampling: added`, or the whole line
    when its verb or positional arguments changed."""
    if before[:1] != now[:1] or _positional(before) != _positional(now):
        return [f"was `{shlex.join(before)}`, now `{shlex.join(now)}`"]
    old, new = _options(before), _options(now)
    return [
        f"{key}: {_value(old.get(key))} -> {_value(new.get(key))}"
        for key in sorted(old.keys() | new.keys(), key=lambda k: (k not in old, k))
        if old.get(key) != new.get(key)
    ]


def _is_option(arg: str) -> bool:
    """`--beam` or `-i`, not a value (`-0.5`)."""
    return arg.startswith("--") or (len(arg) == 2 and arg[0] == "-" and arg[1].isalpha())


def _positional(argv: list[str]) -> list[str]:
    """The arguments before the first option."""
    return next((argv[:i] for i, arg in enumerate(argv) if _is_option(arg)), argv)


def _options(argv: list[str]) -> dict[str, list[str]]:
    """Each option's values in order (a flag's: [""]); `--set KEY=VALUE` keyed `--set KEY`."""
    found: dict[str, list[str]] = {}
    rest = argv[len(_positional(argv)) :]
    for i, arg in enumerate(rest):
        if not _is_option(arg):
            continue
        value = rest[i + 1] if i + 1 < len(rest) and not _is_option(rest[i + 1]) else ""
        key = arg
        if arg == SET and "=" in value:
            name, value = value.split("=", 1)
            key = f"{SET} {name}"
        found.setdefault(key, []).append(value)
    return found


def _value(values: list[str] | None) -> str:
    if values is None:
        return "(none)"
    return ", ".join(v or "(on)" for v in values)
