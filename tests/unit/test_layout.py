"""The package's wings import one way: a wing may import those below it, never one above or beside it.

The order, lowest first (a name is a top-level module or a subpackage of `seq2seq`):

    core        errors, files, locks, special, cpu, device, batching    (they import only each other)
    config      the typed config and its loader
<<<<<<< HEAD
    align       word alignments: Pharaoh lines, AER, eflomal, words <-> pieces    (beside config)
=======
    markup      inline tags: a line read into text and tags, the tags put back   (beside config)
>>>>>>> markup
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
    pipeline    `s2s pipeline`: its file, its steps and their records, the final table
    commands    each command's work, callable without the command line (engines, translate, ...)
    cli         the command line (cli, cli_app, cli_options, cli_cache, cli_pipeline), and `python -m seq2seq`
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import seq2seq

PACKAGE = Path(seq2seq.__file__).parent

# each level may import any level before it; wings on one level may not import each other
LEVELS: list[set[str]] = [
    {"errors", "files", "locks", "special", "cpu", "device", "batching", "__init__"},
    {"config", "align", "markup"},
    {"run", "checkpoint"},
    {"data", "models"},
    {"decoding"},
    {"training", "translate"},
    {"evaluation"},
    {"serve", "ct2", "hf"},
    {"pipeline"},
    {"commands"},
    {"cli", "cli_app", "cli_options", "cli_cache", "cli_pipeline", "__main__"},
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
    copy = tmp_path / "seq2seq"
    for path in PACKAGE.rglob("*.py"):
        target = copy / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    planted = copy / importer
    planted.write_text(planted.read_text(encoding="utf-8") + f"\n{statement}\n", encoding="utf-8")
    module = "seq2seq." + importer.removesuffix(".py").replace("/", ".")
    assert [w for w in upward_imports(copy) if w.startswith(module)] == [
        f"{module} -> {statement.split()[1]}"
    ]
