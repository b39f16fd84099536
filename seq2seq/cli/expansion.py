"""A command's options made from the dataclasses its work takes (`seq2seq.flags`), by one helper.

`@verb(app)` on a function whose parameters are typed with such dataclasses (`job: TranslateJob`)
registers a command whose options are the dataclasses' fields: each `option(...)` field becomes an
option named after it (`max_len_a` -> `--max-len-a`), with its help and its range, a `tuple` field a
repeatable option, a `group(...)` field's dataclass opened in place. Typer reads the options from the
generated signature; the function is called with the dataclasses built back from them, inside
`user_errors` (a mistake in a value is one `error:` line and code 2). Other parameters keep their
own typer annotations.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from dataclasses import MISSING, is_dataclass
from typing import Annotated, Any

import typer
from typer import Argument, BadParameter, Option

from seq2seq.cli.exits import user_errors
from seq2seq.flags import EVERY, FLAG, GROUP, Group, Leaf, leaves


def verb(app: typer.Typer, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as a command of `app`, its dataclass parameters opened."""

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        command = expanded(func)
        app.command(name)(command)
        return command

    return register


def expanded(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` taking flat options: a signature typer reads, and a call that builds its dataclasses."""
    hints = typing.get_type_hints(func, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, type] = {}
    plain: set[str] = set()
    for p in inspect.signature(func).parameters.values():
        hint = hints[p.name]
        if isinstance(hint, type) and is_dataclass(hint):
            groups[p.name] = hint
            params += [_parameter(leaf) for leaf in leaves(hint)]
        else:
            plain.add(p.name)
            params.append(p.replace(annotation=hint, kind=inspect.Parameter.KEYWORD_ONLY))
    _check_unique(func.__name__, params)

    def command(**flat: Any) -> Any:
        with user_errors():
            given = {n: build(cls, flat) for n, cls in groups.items()}
            return func(**given, **{k: v for k, v in flat.items() if k in plain})

    command.__name__, command.__doc__, command.__module__ = func.__name__, func.__doc__, func.__module__
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def build(cls: type, flat: dict[str, Any], shown: Group = EVERY, default: Any = None) -> Any:
    """An instance of `cls` from the flat options typer parsed; a field not `shown` keeps its value
    in `default` (a group's default instance), else its own default."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        inner = getattr(default, field.name) if default is not None else field.default
        inner = None if inner is MISSING else inner  # a required group: its fields' own defaults
        if not shown.shows(field.name):
            if default is not None:
                values[field.name] = inner
        elif GROUP in field.metadata:
            values[field.name] = build(hints[field.name], flat, field.metadata[GROUP], inner)
        elif FLAG in field.metadata:
            values[field.name] = _value(flat[field.name], hints[field.name])
        elif default is not None:
            values[field.name] = inner
    return cls(**values)


def _value(given: Any, hint: Any) -> Any:
    """What typer parsed, as the field holds it: a repeated option's list as a tuple."""
    if typing.get_origin(hint) is tuple:
        return tuple(given or ())
    return given


def _parameter(leaf: Leaf) -> inspect.Parameter:
    """The typer parameter of one option."""
    flag, hint = leaf.flag, leaf.hint
    default = leaf.default
    if typing.get_origin(hint) is tuple:  # a repeatable option: typer takes a list (None: not given)
        item: Any = list[typing.get_args(hint)[0]]  # type: ignore[misc]
        hint, default = (item, MISSING) if default is MISSING else (item | None, None)
    check = between(flag.low, flag.high, flag.why) if flag.low is not None else None
    shown = flag.help.replace("[", "\\[")  # text, not rich markup: `[default: the run's]` stays
    if flag.argument:
        info: Any = Argument(help=shown, metavar=flag.metavar)
    else:
        info = Option(*flag.names, help=shown, callback=check, metavar=flag.metavar)
    given = inspect.Parameter.empty if default is MISSING else default
    return inspect.Parameter(
        leaf.name, inspect.Parameter.KEYWORD_ONLY, default=given, annotation=Annotated[hint, info]
    )


def _check_unique(command: str, params: list[inspect.Parameter]) -> None:
    names = [p.name for p in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"s2s {command}: options declared twice: {twice}"


def between(low: float, high: float | None, why: str = "") -> Callable[[Any], Any]:
    """An option's check: a number in [low, high], else a usage error that says what it implies
    (NaN and the infinities are refused too: every comparison with NaN is false)."""
    top = float("inf") if high is None else high

    def check(value: Any) -> Any:
        for number in value if isinstance(value, list) else [value]:  # a repeated option: each
            if number is not None and not low <= number <= top:
                raise BadParameter(
                    f"{number} is not in [{_shown(low)}, {_shown(top)}]" + (f": {why}" if why else "")
                )
        return value

    return check


def _shown(bound: float) -> str:
    return f"{bound:g}" if isinstance(bound, float) else str(bound)
