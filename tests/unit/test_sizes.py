"""Modules and functions stay a size a reader takes in: a file at most 350 lines, a function at most 60.

What is larger today is listed below with its size as a ceiling: an entry that grows fails, and so does
one that has shrunk to the limit (take it off the list) or below its ceiling (lower the ceiling), so
the list only ever gets shorter.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import ROOT

MAX_FILE_LINES = 350
MAX_FUNCTION_LINES = 60
CHECKED = ("seq2seq", "experiments", "benchmarks", "tools")  # the Python of the repository
# "path": lines, for files over MAX_FILE_LINES
LARGE_FILES: dict[str, int] = {
    "seq2seq/evaluation/report.py": 358,
}
# "path:qualified.name": lines, for functions over MAX_FUNCTION_LINES
LONG_FUNCTIONS: dict[str, int] = {
    "seq2seq/serve/app.py:create_app": 112,
    "seq2seq/config/data.py:DataConfig.problems": 76,
}


def python_files(root: Path = ROOT) -> list[Path]:
    return sorted(p for folder in CHECKED for p in (root / folder).rglob("*.py"))


def file_sizes(root: Path = ROOT) -> dict[str, int]:
    """Every checked file over the limit, by its path in the repository."""
    sizes = {
        p.relative_to(root).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in python_files(root)
    }
    return {path: lines for path, lines in sizes.items() if lines > MAX_FILE_LINES}


def functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, lines) of every function under `node`, decorators and docstring included."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                assert child.end_lineno is not None
                yield name, child.end_lineno - start + 1
            yield from functions(child, f"{name}.")


def function_sizes(root: Path = ROOT) -> dict[str, int]:
    """Every function over the limit, as `path:Class.name`."""
    found: dict[str, int] = {}
    for path in python_files(root):
        where = path.relative_to(root).as_posix()
        for name, lines in functions(ast.parse(path.read_text(encoding="utf-8"))):
            if lines > MAX_FUNCTION_LINES:
                found[f"{where}:{name}"] = lines
    return found


def over_ceilings(sizes: dict[str, int], ceilings: dict[str, int], limit: int) -> list[str]:
    """What breaks the rule: over the limit and not listed, over its ceiling, or listed without need."""
    wrong = [
        f"{name}: {n} lines (limit {limit}): split it" for name, n in sizes.items() if name not in ceilings
    ]
    wrong += [
        f"{name}: {sizes[name]} lines, ceiling {ceilings[name]}"
        for name in ceilings
        if sizes.get(name, 0) > ceilings[name]
    ]
    wrong += [
        f"{name}: {sizes.get(name, 0)} lines now: lower its ceiling, or drop it at {limit} or less"
        for name in ceilings
        if sizes.get(name, 0) < ceilings[name]
    ]
    return wrong


def test_no_file_grows_past_its_ceiling():
    assert over_ceilings(file_sizes(), LARGE_FILES, MAX_FILE_LINES) == []


def test_no_function_grows_past_its_ceiling():
    assert over_ceilings(function_sizes(), LONG_FUNCTIONS, MAX_FUNCTION_LINES) == []


def test_a_grown_or_new_long_function_and_a_stale_entry_are_found(tmp_path: Path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    for folder in CHECKED:
        (tmp_path / folder).mkdir()
    (tmp_path / "seq2seq" / "m.py").write_text(
        f"class C:\n    def long(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n"
    )
    sizes = function_sizes(tmp_path)
    assert sizes == {"seq2seq/m.py:C.long": MAX_FUNCTION_LINES + 1}
    assert len(over_ceilings(sizes, {}, MAX_FUNCTION_LINES)) == 1  # new
    assert len(over_ceilings(sizes, {"seq2seq/m.py:C.long": 61}, MAX_FUNCTION_LINES)) == 0
    assert len(over_ceilings(sizes, {"seq2seq/m.py:C.long": 60}, MAX_FUNCTION_LINES)) == 1  # grown
    assert len(over_ceilings(sizes, {"seq2seq/m.py:C.long": 70}, MAX_FUNCTION_LINES)) == 1  # stale ceiling
    assert len(over_ceilings({}, {"seq2seq/gone.py:f": 70}, MAX_FUNCTION_LINES)) == 1  # no longer needed


def test_no_statement_is_kept_from_the_formatter():
    """A size is met by a better split, never by folding statements the formatter would unfold."""
    kept = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in python_files()
        if path.is_relative_to(ROOT / "seq2seq")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert kept == []
