"""The strict loader: YAML and `--set a.b=v` overrides in, a validated `Config` out, and back to YAML.

Unknown keys (named by their dotted path, with the closest valid key), wrong types and the value rules
of every section are all collected first and reported in one `ConfigError`. The document is bounded
before it is used: its size, its nesting and what its aliases expand to (an anchor bomb) are refused
while it is read, and error messages show values through a bounded repr.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import math
import reprlib
import typing
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml

from seq2seq.config.schema import Config
from seq2seq.errors import ConfigError

T = TypeVar("T")
MAX_INT = 2**31  # every integer setting fits a C int (SentencePiece, torch)
MAX_BYTES = 256 << 10  # a config is a few hundred lines; pure-Python YAML reads about 100 KB a second
MAX_DEPTH = 32  # a config needs 4: the document, a section, a list of files, a file name
MAX_VALUES = 100_000  # scalars and collections, with every alias expanded
# what a config saved by an older s2s meant by a key it did not have yet (its default then)
SAVED_BEFORE = {("decode", "length_norm"): "gnmt"}


def load_config(path: str | Path, overrides: list[str] | None = None, saved: bool = False) -> Config:
    """Read a YAML config, apply `a.b=value` overrides, and validate everything at once.

    `saved`: the file is a run's own resolved config, so a key it lacks is one that did not exist when
    it was written, and means what it meant then (`SAVED_BEFORE`), not today's default.
    """
    raw = read_yaml_mapping(path)
    for item in overrides or []:
        apply_override(raw, item)
    return config_from_dict(raw, saved)


def read_yaml_mapping(path: str | Path, what: str = "config") -> dict[str, Any]:
    """The mapping a YAML file holds (a config, a pipeline), read within the bounds: its size, UTF-8,
    its nesting and what its aliases expand to. `what` names the file in errors."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{what} file not found: {path}")
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read {what} file {path}: {e.strerror}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path} is over {MAX_BYTES // 1024} KiB: is it a {what}? (one is a few KB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"{path}: line {line} is not valid UTF-8 (save the {what} as UTF-8)") from None
    raw = parse_yaml(text, str(path)) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return raw


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Set `section.key=value` in a raw config dict; the value is parsed as YAML, then type-checked."""
    if "=" not in item:
        raise ConfigError(f"override {shown(item)} must look like section.key=value")
    dotted, value = item.split("=", 1)
    *parents, leaf = dotted.strip().split(".")
    node = raw
    for name in parents:
        if node.get(name, "") is None:  # a section written empty (`train:`): its defaults, so far
            node[name] = {}
        node = node.setdefault(name, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {shown(item)}: {_key(name)} is not a section")
    if len(item) > MAX_BYTES:
        raise ConfigError(f"override {shown(item)}: over {MAX_BYTES // 1024} KiB")
    where = f"override {shown(item)}: the value"
    node[leaf] = parse_yaml(value, where, depth=len(parents) + 1) if value.strip() else ""


def parse_yaml(text: str, where: str, depth: int = 0) -> Any:
    """Plain data from YAML `text` (safe types only), bounded: nesting deeper than `MAX_DEPTH` or
    aliases that expand past `MAX_VALUES` values are refused while it is read, before any is built.

    `depth` is how deep the document sits in the config (an override's value: below its sections).
    """
    loader = _BoundedLoader(text, depth)
    try:
        return loader.get_single_data()
    except _Unbounded as e:
        raise ConfigError(f"{where}: {e}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{where} is not valid YAML: {e}") from None
    finally:
        loader.dispose()


class _Unbounded(Exception):
    """The document nests or expands past the bounds."""


class _BoundedLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that counts, as it composes, each node's depth and its size with aliases
    expanded (what building it would cost), and stops at the bounds."""

    def __init__(self, text: str, depth: int) -> None:
        super().__init__(text)
        self.depth, self.values = depth, 0
        self.sizes: dict[int, int] = {}  # id(node) -> values in it, aliases expanded; set once composed

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self.sizes:
                raise _Unbounded(f"line {line}: alias *{event.anchor} refers to a value that contains it")
            self._count(self.sizes.get(id(target), 1), line)
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Unbounded(f"line {line}: nested more than {MAX_DEPTH} levels deep")
        before = self.values
        self._count(1, line)
        node = super().compose_node(parent, index)
        self.sizes[id(node)] = self.values - before
        self.depth -= 1
        return node

    def _count(self, values: int, line: int) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            raise _Unbounded(
                f"line {line}: the aliases (*name) expand to more than {MAX_VALUES:,} values; "
                "write the values out instead"
            )


_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxstring, _repr.maxother = 3, 60, 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 4


def _key(key: Any) -> str:
    """A key as a dotted path shows it: as written, unless it is long or not a string."""
    return key if isinstance(key, str) and len(key) <= 60 else shown(key)


def shown(value: Any) -> str:
    """`repr(value)` cut short: what an error message may show of any value, in bounded time."""
    return _repr.repr(value)


def config_from_dict(raw: dict[str, Any], saved: bool = False) -> Config:
    """Build a `Config` from plain data, raising one `ConfigError` that lists every problem.

    The value rules run only on a config whose keys and types are all valid (they read the values).
    `saved`: `raw` was saved by s2s (a run's config, an export's), as `load_config` says.
    """
    if saved:
        raw = {**raw}
        for (section, key), value in SAVED_BEFORE.items():
            if isinstance(raw.get(section), dict) and key not in raw[section]:
                raw[section] = {**raw[section], key: value}
    errors: list[str] = []
    cfg = _build(Config, raw, "", errors)
    if not errors:
        errors.extend(cfg.problems())
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
    return cfg


def config_to_dict(cfg: Config) -> dict[str, Any]:
    """Plain nested dict, suitable for YAML and for checkpoints: one file is a string, several a list."""
    return dataclasses.asdict(cfg, dict_factory=lambda items: {k: _plain(v) for k, v in items})


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):  # a choice (model.task) is written as its plain name
        return value.value
    if isinstance(value, tuple):  # of file names: one is written as a string; of sections: a list
        return value[0] if len(value) == 1 and isinstance(value[0], str) else list(value)
    return value


def config_differences(
    old: dict[str, Any], new: dict[str, Any], sections: Sequence[str]
) -> list[tuple[str, Any, Any]]:
    """(dotted key, old value, new value) for each key of `sections` whose value differs.

    A key `old` lacks (written before the key existed) counts as unchanged.
    """
    return [
        (f"{section}.{key}", old.get(section, {}).get(key, value), value)
        for section in sections
        for key, value in new[section].items()
        if old.get(section, {}).get(key, value) != value
    ]


def save_config(cfg: Config, path: Path) -> None:
    """Write `cfg` as YAML (atomically), in the form `load_config` reads back to an equal `Config`."""
    from seq2seq.files import write_text

    write_text(path, yaml.safe_dump(config_to_dict(cfg), sort_keys=False))


def dataclass_from_dict(cls: type[T], raw: Any, errors: list[str], prefix: str = "") -> T:
    """An instance of the frozen dataclass `cls` (a config's, a pipeline's) from plain data, as the
    strict loader builds one: each unknown key (with the closest valid one) or mistyped value is
    appended to `errors`, named by its dotted path under `prefix`."""
    return typing.cast(T, _build(cls, raw, prefix, errors))


def _build(cls: type, raw: Any, prefix: str, errors: list[str]) -> Any:
    """An instance of the dataclass `cls` from `raw`, appending each unknown key or bad value to `errors`."""
    if not isinstance(raw, dict):
        errors.append(f"{prefix.rstrip('.') or 'config'}: expected a mapping, got {type(raw).__name__}")
        return cls()
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f" (did you mean {prefix}{close[0]}?)" if close else f" (valid keys: {', '.join(names)})"
            errors.append(f"{prefix}{_key(key)}: unknown key{hint}")
    values: dict[str, Any] = {}
    for name in names:
        if name not in raw:
            continue
        kind = hints[name]
        if (section := _optional_dataclass(kind)) is not None and raw[name] is None:
            # a section written empty (`train:`): its defaults; one that may be left out: left out
            values[name] = _build(section, {}, f"{prefix}{name}.", errors) if kind is section else None
        elif section is not None:
            values[name] = _build(section, raw[name], f"{prefix}{name}.", errors)
        elif (item := _listed_dataclass(kind)) is not None:
            values[name] = _build_list(item, raw[name], f"{prefix}{name}", errors)
        else:
            values[name] = _coerce(raw[name], kind, f"{prefix}{name}", errors)
    return cls(**values)


def _optional_dataclass(kind: Any) -> type | None:
    """The dataclass `X` when `kind` is `X` or `X | None` (a section that may be left out)."""
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return kind
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if type(None) in typing.get_args(kind) and len(args) == 1 and dataclasses.is_dataclass(args[0]):
        return typing.cast(type, args[0])
    return None


def _listed_dataclass(kind: Any) -> type | None:
    """The dataclass `X` when `kind` is `tuple[X, ...]` (a list of sections, such as data.corpora)."""
    args = typing.get_args(kind)
    item = args[0] if len(args) == 2 else None
    if typing.get_origin(kind) is tuple and isinstance(item, type) and dataclasses.is_dataclass(item):
        return item
    return None


def _build_list(cls: type, raw: Any, key: str, errors: list[str]) -> tuple[Any, ...]:
    """A tuple of `cls` from a YAML list of mappings, each item's errors named `key[i].field`."""
    if not isinstance(raw, list):
        errors.append(f"{key}: expected a list of mappings, got {type(raw).__name__} {shown(raw)}")
        return ()
    return tuple(_build(cls, item, f"{key}[{i}].", errors) for i, item in enumerate(raw))


def _coerce(value: Any, kind: Any, key: str, errors: list[str]) -> Any:
    """`value` as the field type `kind`, or `value` itself with the reason appended to `errors`."""
    origin = typing.get_origin(kind)
    if isinstance(kind, type) and issubclass(kind, Enum):  # a choice declared once (`config.task`)
        names = [member.value for member in kind]
        if value not in names:
            errors.append(f"{key}: {shown(value)} is not one of {', '.join(names)}")
            return value
        return kind(value)
    if origin is Literal:
        choices = typing.get_args(kind)
        if value not in choices:
            errors.append(f"{key}: {shown(value)} is not one of {', '.join(map(str, choices))}")
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) >= MAX_INT:
                errors.append(f"{key}: {value} is out of range (|value| < {MAX_INT})")
            return value
    elif kind is float:
        number = _as_float(value)
        if number is not None:
            if not math.isfinite(number):
                errors.append(f"{key}: must be a finite number, got {shown(value)}")
            return number
    elif kind is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    elif kind == tuple[str, ...]:  # one name or a list of names (files, control tokens)
        items = value if isinstance(value, list) else [value]
        if all(isinstance(v, str) and v for v in items):
            return tuple(items)
        errors.append(f"{key}: expected a name or a list of names, got {shown(value)}")
        return ()
    elif kind == tuple[float, ...]:  # one number or a list of them (length penalties)
        items = value if isinstance(value, list) else [value]
        numbers = [_as_float(v) for v in items]
        if items and all(n is not None and math.isfinite(n) for n in numbers):
            return tuple(numbers)
        errors.append(f"{key}: expected a number or a list of finite numbers, got {shown(value)}")
        return ()
    elif kind == tuple[int, ...]:  # one number or a list of them (layer indices)
        items = value if isinstance(value, list) else [value]
        if all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < MAX_INT for v in items):
            return tuple(items)
        errors.append(f"{key}: expected a number or a list of numbers, got {shown(value)}")
        return ()
    name = getattr(kind, "__name__", str(kind))
    errors.append(f"{key}: expected {name}, got {type(value).__name__} {shown(value)}")
    return value


def _as_float(value: Any) -> float | None:
    """A YAML number as a float (an int counts), or None when it is not one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):  # YAML 1.1 reads `3e-4` (no dot) as a string
        with contextlib.suppress(ValueError):
            return float(value)
    return None
