"""How a field of a command's dataclass shows on the command line: its help, its names, its range.

A command's options are declared once, as fields of the frozen dataclass its work takes
(`TranslateJob`, `DecodeOverrides`, `Placement`, `Direction`, ...): `option(default, help)` in place
of a plain default, `group()` for a field that is itself such a dataclass. `seq2seq.cli` expands
them into the command's options (`--max-len-a` for `max_len_a`); `seq2seq.pipeline` writes command
lines from the same values (`argv`). Nothing here imports typer.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, Field, dataclass
from types import MappingProxyType
from typing import Any

REQUIRED: Any = MISSING  # `option(REQUIRED, ...)`: an option the command cannot do without
FLAG = "s2s.flag"  # the key of a field's `Flag` in its metadata
GROUP = "s2s.group"  # the key of a field's `Group`
EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class Flag:
    """One option (or, `argument`, a positional argument) of a command."""

    help: str
    names: tuple[str, ...] = ()  # e.g. ("-o", "--output"); none: --the-field-name (and --no-... for bool)
    low: float | None = None  # the range a number must lie in, both ends included
    high: float | None = None
    why: str = ""  # what the range guards, said when a number falls outside it
    argument: bool = False  # positional, not an option
    metavar: str | None = None


@dataclass(frozen=True)
class Group:
    """A field whose value is a dataclass of options: its options join the command's, less `omit`
    (or only `only`), which keep the field's default's values."""

    omit: tuple[str, ...] = ()
    only: tuple[str, ...] = ()

    def shows(self, name: str) -> bool:
        return name not in self.omit and (not self.only or name in self.only)


EVERY = Group()  # a group shown whole


def option(
    default: Any,
    help: str,
    *names: str,
    between: tuple[float, float | None] | None = None,
    why: str = "",
    metavar: str | None = None,
) -> Any:
    """A field that is a command-line option (typed as the field), `between` its range (high None:
    no upper bound)."""
    low, high = between or (None, None)
    flag = Flag(help, names, low, high, why, metavar=metavar)
    return dataclasses.field(default=default, metadata={FLAG: flag})


def argument(help: str, default: Any = MISSING) -> Any:
    """A field that is a positional argument (required without `default`)."""
    return dataclasses.field(default=default, metadata={FLAG: Flag(help, argument=True)})


def declared(flag: Flag, default: Any = MISSING) -> Callable[[], Any]:
    """An option that several dataclasses hold, declared once: each calls it for its field."""
    return lambda: dataclasses.field(default=default, metadata={FLAG: flag})


def group(default: Any, omit: tuple[str, ...] = (), only: tuple[str, ...] = ()) -> Any:
    """A field holding a dataclass of options, all of them or those `only`/not `omit` shown."""
    return dataclasses.field(default=default, metadata={GROUP: Group(omit, only)})


@dataclass(frozen=True)
class Leaf:
    """An option as a command shows it: where its value goes and what it is."""

    path: tuple[str, ...]  # field names from the command's dataclass down to it
    field: Field[Any]
    flag: Flag
    hint: Any  # the field's type

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def spelling(self) -> str:
        """How a command line written from a value spells the option: its first name, or
        --the-field-name."""
        return self.flag.names[0] if self.flag.names else "--" + self.name.replace("_", "-")

    @property
    def default(self) -> Any:
        if self.field.default is not MISSING:
            return self.field.default
        return self.field.default_factory() if self.field.default_factory is not MISSING else MISSING


def leaves(cls: type, shown: Group = EVERY, path: tuple[str, ...] = ()) -> Iterator[Leaf]:
    """Every option `cls` shows, groups opened, in field order."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if not shown.shows(field.name):
            continue
        if GROUP in field.metadata:
            yield from leaves(hints[field.name], field.metadata[GROUP], (*path, field.name))
        elif FLAG in field.metadata:
            yield Leaf((*path, field.name), field, field.metadata[FLAG], hints[field.name])


def argv(value: Any, placeholders: Mapping[str, str] = EMPTY) -> tuple[str, ...]:
    """The command line that asks for `value` (a dataclass of options): its arguments first, then
    each option whose value is not its default, in field order; a field named in `placeholders`
    is written as its text there (a value known later)."""
    shown = [(leaf, _get(value, leaf.path)) for leaf in leaves(type(value))]
    positional = [_text(item) for leaf, v in shown if leaf.flag.argument for item in _items(v)]
    options: list[str] = []
    for leaf, v in shown:
        if leaf.name in placeholders:
            options += [leaf.spelling, placeholders[leaf.name]]
        elif leaf.flag.argument or v == leaf.default or v is None:
            continue
        elif isinstance(v, bool):
            options.append(leaf.spelling if v else "--no-" + leaf.spelling.removeprefix("--"))
        else:
            options += [arg for item in _items(v) for arg in (leaf.spelling, _text(item))]
    return (*positional, *options)


def switch(cls: type, name: str) -> str:
    """How a command line spells the option of `cls`'s field `name` (a flag that sets how a
    command starts, not what it makes: `--resume`)."""
    return next(leaf.spelling for leaf in leaves(cls) if leaf.name == name)


def _items(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,)


def _get(value: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        value = getattr(value, name)
    return value


def _text(value: Any) -> str:
    """A value as typed: a float as short as it can be written and read back the same."""
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)
