"""The task and the model family are chosen once, and then passed down as behaviour.

A task (`translate`, `classify`, `tag`, `Task.X`) is named only where it is declared and where a
wing turns it into the object that does its work (a chooser, listed in `TASK_CHOOSERS`); everything
else is handed that object and never compares the task again. `model.arch` is read, and a family
named, only by the config's rules and by `models/family.py`, whose `Family` the other wings ask, and
`models/build.py`, which builds each family.

The test reads the package's source. A place is a module (relative to the package) and the scope
a name sits in: the innermost function or class around it, dotted ("" for the module's top level).
"""

from __future__ import annotations

import ast
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest

import seq2seq
from seq2seq.config import ModelConfig, Task

PACKAGE = Path(seq2seq.__file__).parent
TASK_NAMES = {task.value for task in Task}
FAMILY_NAMES = set(typing.get_args(typing.get_type_hints(ModelConfig)["arch"]))

# where a task may be named: the declaration, then each wing's chooser
TASK_CHOOSERS = {
    ("config/task.py", "Task"),  # the declaration
    ("config/task.py", "Task.sequence_targets"),  # a fact the declaration gives (fixed batch shapes')
    ("config/model.py", "ModelConfig"),  # model.task's default
    ("config/model.py", "ModelConfig._task_rules"),  # the rules each task brings
    ("config/data.py", "DataConfig.problems"),  # the data section checked alone: a translation's
    ("config/data.py", "DataConfig._task_rules"),
    ("data/targets.py", ""),  # a translation's pieces, a classifier's labels, a tagger's tags
    ("models/build.py", "reader_head"),  # what a reader reads its answers from
    ("decoding/answers.py", ""),  # searched or read
    ("training/validation.py", ""),  # BLEU or accuracy
    ("evaluation/evaluation_plan.py", "evaluation_task"),  # hypotheses without a run are translations
    ("evaluation/evaluation_plan.py", "scoring_options"),  # BLEU, chrF and TER, or a reader's scores
}
# where s2s's commands are named, one of which is `translate`: a command line's verb, not the task
VERBS = {("pipeline/command.py", "Verb")}
# where `model.arch` may be read and a family named: the config's rules, the families and their builder
FAMILY_READERS = ("config/", "models/family.py", "models/build.py")


@dataclass(frozen=True)
class Named:
    module: str
    scope: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} ({self.scope or 'top level'}): {self.what}"


def scoped(node: ast.AST, scope: str = ""):
    """Every node below `node`, with the dotted name of the innermost function or class around it."""
    for child in ast.iter_child_nodes(node):
        inner = scope
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{scope}.{child.name}" if scope else child.name
        yield child, inner
        yield from scoped(child, inner)


def named(package: Path = PACKAGE) -> dict[str, list[Named]]:
    """Each place the package names a task ("task") or reads or names a family ("family").

    A dictionary key is a record's field name, not a choice (`{"tag": ...}` names a corpus tag).
    """
    found: dict[str, list[Named]] = {"task": [], "family": []}
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        keys = {id(k) for d in ast.walk(tree) if isinstance(d, ast.Dict) for k in d.keys if k is not None}
        for node, scope in scoped(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in keys:
                kind = "task" if node.value in TASK_NAMES else "family" if node.value in FAMILY_NAMES else ""
                kind = "family" if node.value == "arch" else kind  # getattr(cfg, "arch")
            elif isinstance(node, ast.Attribute):
                is_task = isinstance(node.value, ast.Name) and node.value.id == "Task"
                kind = "task" if is_task and node.attr in Task.__members__ else ""
                kind = "family" if node.attr == "arch" else kind
            else:
                continue
            if kind:
                found[kind].append(Named(module, scope, node.lineno, ast.unparse(node)))
    return found


def task_named_elsewhere(package: Path = PACKAGE) -> list[str]:
    return [str(n) for n in named(package)["task"] if (n.module, n.scope) not in TASK_CHOOSERS | VERBS]


def family_read_elsewhere(package: Path = PACKAGE) -> list[str]:
    return [str(n) for n in named(package)["family"] if not n.module.startswith(FAMILY_READERS)]


def test_a_task_is_named_only_where_it_is_declared_and_chosen():
    assert task_named_elsewhere() == []


def test_only_the_config_and_the_model_builder_read_the_family():
    assert family_read_elsewhere() == []


def test_every_chooser_listed_still_names_a_task():
    """A stale entry would let a comparison there pass unseen: the list stays what the code is."""
    places = {(n.module, n.scope) for n in named()["task"]}
    assert sorted(TASK_CHOOSERS - places) == []


@pytest.mark.parametrize(
    ("module", "planted", "found"),
    [
        ("training/loss.py", 'ASKED = cfg.model.task == "classify"', "task"),
        ("serve/limits.py", "READS = task in (Task.CLASSIFY, Task.TAG)", "task"),
        ("translate/streams.py", 'match task:\n    case "tag":\n        pass', "task"),
        ("ct2/runtime.py", "FAMILY = cfg.model.arch", "family"),
        ("hf/pegasus.py", 'ENCODER_DECODER = "encoder_decoder"', "family"),
        ("training/state.py", 'FAMILY = getattr(cfg.model, "arch")', "family"),
    ],
)
def test_a_planted_question_is_found(tmp_path, module, planted, found):
    copy = tmp_path / "seq2seq"
    for path in PACKAGE.rglob("*.py"):
        target = copy / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{planted}\n", encoding="utf-8")
    wrong = task_named_elsewhere(copy) if found == "task" else family_read_elsewhere(copy)
    assert wrong and all(w.startswith(f"{module}:") for w in wrong)


# where an engine is named or told apart: the chooser, and each engine saying what it is
ENGINE_NAMES = {"auto", "s2s", "ctranslate2"}
ENGINE_CHOOSERS = ("commands/engines.py",)
ENGINE_CLASSES = {"Translator", "CT2Translator"}


def engine_tests() -> list[Named]:
    """Comparisons of something named `engine` with an engine's name, and isinstance tests against an
    engine's class, outside the chooser."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module in ENGINE_CHOOSERS:
            continue
        for node, scope in scoped(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                named = any(isinstance(s, ast.Constant) and s.value in ENGINE_NAMES for s in sides)
                if named and any("engine" in ast.unparse(s) for s in sides):
                    found.append(Named(module, scope, node.lineno, ast.unparse(node)))
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" and len(node.args) == 2:
                classes = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if classes & ENGINE_CLASSES:
                    found.append(Named(module, scope, node.lineno, ast.unparse(node)))
    return found


def test_the_engine_is_chosen_once_and_handed_down():
    """translate, evaluate, serve and pivoting receive an engine and never ask which one they hold."""
    assert engine_tests() == [], "\n".join(map(str, engine_tests()))
