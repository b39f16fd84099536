"""The config reference, generated from the config dataclasses (`seq2seq/config/`).

Each key's description is the comment written beside its field, or the comment lines right above
it, in the section's module: the source stays the one place a key is explained, and
`undocumented()` (a unit test) names every key that has none. The type and the default come from the
dataclass itself.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import io
import tokenize
import typing
from collections.abc import Iterator
from typing import Any

from seq2seq.config import Config

DIRECTIVES = ("fmt:", "noqa", "type:")  # comments for tools, not for readers


def comments(source: str) -> dict[int, tuple[str, bool]]:
    """Line number -> (comment text, whether the line holds nothing else)."""
    found = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            if not text.startswith(DIRECTIVES):
                found[tok.start[0]] = (text, tok.line[: tok.start[1]].strip() == "")
    return found


def descriptions(cls: type) -> dict[str, str]:
    """Each field of dataclass `cls` -> the comment lines above it and the comment beside it, joined."""
    source = inspect.getsource(inspect.getmodule(cls))  # type: ignore[arg-type]
    notes = comments(source)
    node = next(
        n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == cls.__name__
    )
    found = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        above: list[str] = []
        line = stmt.lineno - 1
        while line in notes and notes[line][1]:
            above.insert(0, notes[line][0])
            line -= 1
        beside = [notes[n][0] for n in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1) if n in notes]
        found[stmt.target.id] = " ".join(above + beside)
    return found


def sections(cls: type = Config, prefix: str = "") -> Iterator[tuple[str, type]]:
    """(dotted prefix, dataclass) of the root and of every section and list item under it."""
    yield prefix, cls
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        inner = _item_type(hints[f.name])
        if inner is not None:
            listed = "[]" if inner is not hints[f.name] else ""
            yield from sections(inner, f"{prefix}{f.name}{listed}.")


def _item_type(hint: Any) -> type | None:
    """The dataclass a field holds (`DataConfig`), or holds a list of (`tuple[CorpusConfig, ...]`)."""
    if dataclasses.is_dataclass(hint):
        return hint  # type: ignore[return-value]
    args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple and args and dataclasses.is_dataclass(args[0]):
        return args[0]  # type: ignore[return-value]
    return None


def type_name(hint: Any) -> str:
    """How the YAML spells a value of `hint`: `int`, `a | b`, `list of str`."""
    if typing.get_origin(hint) is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(hint))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return " \\| ".join(f"`{m.value}`" for m in hint)
    if typing.get_origin(hint) is tuple:
        return f"list of {type_name(typing.get_args(hint)[0])}"
    plain = {bool: "bool", int: "int", float: "float", str: "string"}
    return plain.get(hint, getattr(hint, "__name__", str(hint)))


def default_text(f: dataclasses.Field[Any]) -> str:
    """The default as YAML writes it, or `required`."""
    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, enum.Enum):
        return f"`{value.value}`"
    if isinstance(value, tuple):
        return f"`{list(value)}`"
    if value == "":
        return '`""`'
    return f"`{value}`"


def undocumented() -> list[str]:
    """Every config key whose field has no comment: what the reference would leave blank."""
    return [
        f"{prefix}{name}"
        for prefix, cls in sections()
        for name, text in descriptions(cls).items()
        if not text and _item_type(typing.get_type_hints(cls)[name]) is None
    ]


def section_table(prefix: str, cls: type) -> list[str]:
    hints, notes = typing.get_type_hints(cls), descriptions(cls)
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if _item_type(hints[f.name]) is None:
            text = notes.get(f.name, "").replace("|", "\\|")
            rows.append(f"| `{prefix}{f.name}` | {type_name(hints[f.name])} | {default_text(f)} | {text} |")
    return rows


def config_reference() -> str:
    """The page: every section's summary and a table of its keys."""
    lines = [
        "# Configuration reference",
        "",
        "Generated from the config dataclasses in `seq2seq/config/` by `tools/docs` at every build of "
        "this site; each description is the comment beside the key's field. A config is strict: an "
        "unknown key, a wrong type or an impossible value fails at load time, naming the dotted key "
        "and the closest valid one, every problem at once. `--set section.key=value` overrides any key "
        "on the command line. Relative paths are relative to the directory `s2s` runs in. Numbers "
        "must be finite, integers below 2^31.",
    ]
    for prefix, cls in sections():
        title = prefix.rstrip(".") or "the root"
        doc = inspect.cleandoc(cls.__doc__ or "")
        lines += ["", f"## `{title}`" if prefix else "## The root", "", doc, "", *section_table(prefix, cls)]
    return "\n".join(lines) + "\n"
