"""The package's wings import one way: a wing may import those below it, never one above or beside it.

The order, lowest first (a name is a top-level module or a subpackage of `seq2seq`):

    core        errors, files, locks, special, cpu, device, batching, flags    (they import only each other)
    config      the typed config and its loader
    align       word alignments: Pharaoh lines, AER, eflomal, words <-> pieces    (beside config)
    markup      inline tags: a line read into text and tags, the tags put back   (beside config)
    run         run (layout, lock, change, checks), checkpoint    (the run directory on disk)
    data        tokenizer, labels, reading and encoding corpora, the prepared corpus
    models      the families and their layers               (beside data: never tokenizers or files)
    decoding    search, reading, batched decoding
    training    set-up, trainer, ...                        (beside translate)
    translate   a run loaded for decoding
    evaluation  metrics, the record, the report
    serve       the HTTP server                             (beside ct2 and hf)
    ct2         CTranslate2 export and engine
    hf          the Hugging Face transformers export
    commands    each command's work, callable without the command line, and the job it takes
    pipeline    `s2s pipeline`: its file, its steps (command lines written from the jobs), the table
    cli         the command line (options made from the jobs' fields), and `python -m seq2seq`

Inside a wing (a subpackage, or top-level modules that lean on each other: `SAME_LEVEL_OK`) modules
import each other in one direction too: no ring such as `a -> b -> a`, not even through an import
inside a function or under `TYPE_CHECKING`. With the order between wings this leaves no ring at all.
A module is its file (`seq2seq.data` is data/__init__.py); `from seq2seq.data import parallel` imports
the module `seq2seq.data.parallel`, `from seq2seq.config import Config` the package's __init__.
Importing a submodule first runs its package's __init__, but that is not counted: an __init__ may
import (re-export) its submodules. A submodule that imports a name from its package's __init__ which
imports that submodule back is a ring: `seq2seq.config -> seq2seq.config.loading -> seq2seq.config`.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

import pytest

import seq2seq

PACKAGE = Path(seq2seq.__file__).parent

# each level may import any level before it; wings on one level may not import each other
LEVELS: list[set[str]] = [
    {"errors", "files", "locks", "special", "cpu", "device", "batching", "flags", "__init__"},
    {"config", "align", "markup"},
    {"run", "checkpoint"},
    {"data", "models"},
    {"decoding"},
    {"training", "translate"},
    {"evaluation"},
    {"serve", "ct2", "hf"},
    {"commands"},
    {"pipeline"},
    {"cli", "__main__"},
]
# top-level modules on one level that lean on each other
SAME_LEVEL_OK = {"core": LEVELS[0], "run": LEVELS[2], "entry": LEVELS[-1]}


def wing(module: str) -> str:
    """`seq2seq.data.tokenizer` -> `data`; `seq2seq.run.layout` -> `run`; `seq2seq` -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def level(name: str) -> int:
    return next(i for i, names in enumerate(LEVELS) if name in names)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every seq2seq module `path` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "seq2seq":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "seq2seq"}
    return found


def upward_imports(package: Path = PACKAGE) -> list[str]:
    """'importer -> imported' for each import that goes up, or sideways between two wings."""
    wrong = []
    for path in sorted(package.rglob("*.py")):
        here = wing(module_name(path, package))
        for target in sorted(imported(path)):
            there = wing(target) if target != "seq2seq" else "__init__"
            if there == here:
                continue
            same_ok = any(here in names and there in names for names in SAME_LEVEL_OK.values())
            if level(there) > level(here) or (level(there) == level(here) and not same_ok):
                wrong.append(f"{module_name(path, package)} -> {target}")
    return wrong


def ring_wing(module: str) -> str:
    """The wing whose modules may import each other: a subpackage, or a group of top-level modules
    (`SAME_LEVEL_OK`), or a top-level module alone."""
    here = wing(module)
    return next((group for group, names in SAME_LEVEL_OK.items() if here in names), here)


def modules_imported(path: Path, package: Path, known: set[str]) -> set[str]:
    """The modules of `known` that `path` imports, wherever the import is (relative ones resolved):
    `from a import b` imports the module `a.b` when there is one, else `a`."""
    here = module_name(path, package)
    home = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*home[: len(home) - node.level + 1], *([node.module] if node.module else [])])
            base = base if node.level else node.module or ""
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    return (found & known) - {here}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module -> the modules of its own wing (`ring_wing`) it imports."""
    paths = {module_name(p, package): p for p in package.rglob("*.py")}
    known = set(paths)
    return {
        name: {m for m in modules_imported(path, package, known) if ring_wing(m) == ring_wing(name)}
        for name, path in paths.items()
    }


def shortest_path(graph: dict[str, set[str]], start: str, goal: str) -> list[str]:
    """[start, ..., goal] along the imports of `graph`, or [] when `goal` cannot be reached."""
    before: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [goal]
            while path[-1] != start:
                path.append(before[path[-1]])
            return path[::-1]
        for after in sorted(graph[node] - before.keys() - {start}):
            before[after] = node
            queue.append(after)
    return []


def import_rings(package: Path = PACKAGE) -> dict[str, list[str]]:
    """Each wing's rings of imports as 'a -> b -> a', by wing: a shortest one through every import on a
    ring, each written once, from its first module by name."""
    graph = import_graph(package)
    rings = set()
    for a in graph:
        for b in graph[a]:
            if back := shortest_path(graph, b, a):
                ring = [a, *back[:-1]]
                first = ring.index(min(ring))
                rings.add(tuple([*ring[first:], *ring[:first], ring[first]]))
    found: dict[str, list[str]] = {}
    for ring in sorted(rings, key=lambda r: (len(r), r)):
        found.setdefault(ring_wing(ring[0]), []).append(" -> ".join(ring))
    return found


def copy_package(tmp_path: Path) -> Path:
    """A copy of the package's Python files, to plant an import in."""
    copy = tmp_path / "seq2seq"
    for path in PACKAGE.rglob("*.py"):
        target = copy / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    return copy


def plant(copy: Path, importer: str, statement: str) -> None:
    planted = copy / importer
    planted.write_text(planted.read_text(encoding="utf-8") + f"\n{statement}\n", encoding="utf-8")


def test_every_module_belongs_to_a_level():
    names = {wing(module_name(p)) for p in PACKAGE.rglob("*.py")}
    placed = set().union(*LEVELS)
    assert names <= placed, f"put these in LEVELS: {sorted(names - placed)}"


def test_no_wing_imports_one_above_or_beside_it():
    assert upward_imports() == []


@pytest.mark.parametrize(
    ("importer", "statement"),
    [
        ("models/encoder_only.py", "from seq2seq.decoding.search import Hypothesis"),  # up
        ("models/build.py", "from seq2seq.data.tokenizer import TokenizerPair"),  # beside
        ("training/loss.py", "from seq2seq.translate.translator import Translator"),  # beside
    ],
)
def test_a_planted_upward_import_is_found(tmp_path, importer, statement):
    copy = copy_package(tmp_path)
    plant(copy, importer, statement)
    module = "seq2seq." + importer.removesuffix(".py").replace("/", ".")
    assert [w for w in upward_imports(copy) if w.startswith(module)] == [
        f"{module} -> {statement.split()[1]}"
    ]


def test_no_wing_has_an_import_ring():
    assert import_rings() == {}


@pytest.mark.parametrize(
    ("importer", "statement", "ring"),
    [
        (  # under TYPE_CHECKING
            "run/layout.py",
            "if TYPE_CHECKING:\n    from seq2seq.run.change import RunChange",
            "seq2seq.run.change -> seq2seq.run.layout -> seq2seq.run.change",
        ),
        (  # inside a function, a submodule imported from its package
            "evaluation/metric_options.py",
            "def body():\n    from seq2seq.evaluation import report",
            "seq2seq.evaluation.metric_options -> seq2seq.evaluation.report"
            " -> seq2seq.evaluation.metric_options",
        ),
        (  # a name from the package's __init__, which imports this submodule
            "config/loading.py",
            "from seq2seq.config import Config",
            "seq2seq.config -> seq2seq.config.loading -> seq2seq.config",
        ),
        (  # relative
            "data/targets.py",
            "from .tokenizer import TokenizerPair",
            "seq2seq.data.targets -> seq2seq.data.tokenizer -> seq2seq.data.targets",
        ),
        (  # between top-level modules of one wing
            "errors.py",
            "import seq2seq.files",
            "seq2seq.errors -> seq2seq.files -> seq2seq.errors",
        ),
    ],
)
def test_a_planted_import_ring_is_found(tmp_path, importer, statement, ring):
    copy = copy_package(tmp_path)
    plant(copy, importer, statement)
    found = import_rings(copy)
    assert list(found) == [ring_wing(ring.split()[0])] and ring in found[ring_wing(ring.split()[0])]
