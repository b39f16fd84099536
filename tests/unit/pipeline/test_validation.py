"""`s2s pipeline` is validated whole before its first step runs: every mistake in the file, the
workspace, the step names it is given or the paths its steps read and write is an `error:` line and
exit code 2, and nothing is written. Each test is a rule, parametrized over the cases it covers; no
test here runs a step (`no_step_runs`)."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from seq2seq.pipeline import run as command
from seq2seq.pipeline.config import read_pipeline
from tests.helpers import ROOT, run_cli

STEPS = [
    "backward", "back_translation", "teacher", "select_teacher", "distillation", "filter", "student",
    "select_student", "export", "evaluate",
]  # fmt: skip


@pytest.fixture(autouse=True)
def no_step_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command a step would run fails the test: every mistake here is found before the first."""

    def ran(*args: object) -> None:
        raise AssertionError(f"a step ran: {args}")

    monkeypatch.setattr(command, "run_logged", ran)


def valid(tmp_path: Path) -> dict[str, Any]:
    """A pipeline with every kind of step, on small data files of its own, its workspace `ws`."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for name in ("train", "valid", "test", "mono"):
        for lang in ("de", "en"):
            (data / f"{name}.{lang}").write_text("1\n2\n", encoding="utf-8")
    return {
        "workspace": str(tmp_path / "ws"),
        "src_lang": "de",
        "tgt_lang": "en",
        "training": {"base": str(ROOT / "configs" / "quickstart.yaml"), "set": ["train.max_steps=2"]},
        "data": {
            "corpora": [{"name": "train", "src": str(data / "train.de"), "tgt": str(data / "train.en")}],
            "valid": {"src": str(data / "valid.de"), "tgt": str(data / "valid.en")},
            "test": [{"name": "test", "src": str(data / "test.de"), "tgt": str(data / "test.en")}],
            "mono_src": [str(data / "mono.de")],
            "mono_tgt": [str(data / "mono.en")],
        },
        "steps": {
            "backward": {},
            "back_translation": {"lines": 10},
            "teacher": {},
            "select": {"checkpoints": ["best"], "length_penalties": [1.0]},
            "distillation": {"sources": ["train", "mono"]},
            "filter": {},
            "student": {"shrink": True, "set": ["model.decoder_layers=1"]},
            "export": {},
        },
    }


def written(tmp_path: Path, raw: dict[str, Any], name: str = "pipeline.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def refused(*args: str) -> str:
    """The one `error:` line (and the lines it goes on with) that `s2s pipeline ARGS` is refused with."""
    result = run_cli("pipeline", *args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.count("error: ") == 1, result.output
    return result.output[result.output.index("error: ") :]


def with_value(raw: dict[str, Any], dotted: str, value: object) -> dict[str, Any]:
    """A copy of `raw` with the key `dotted` (`steps.teacher`) set to `value`."""
    raw = copy.deepcopy(raw)
    *parents, leaf = dotted.split(".")
    node = raw
    for name in parents:
        node = node[name]
    node[leaf] = value
    return raw


EMPTY = [  # sections written empty, and what the file is then: its defaults ([]), or an error naming these
    (["steps"], []),  # the teacher, its choice and the evaluation, with their defaults
    (["steps.teacher"], []),
    (["steps.select"], []),
    (["steps.export"], []),  # the step, with its defaults
    (["training"], ["training.base: required"]),
    (["data"], ["data.corpora: required", "data.valid.src: required", "data.test: required"]),
    (["data.valid"], ["data.valid.src: required", "data.valid.tgt: required"]),
    (["training", "data.valid", "steps.teacher"], ["training.base: required", "data.valid.src: required"]),
]


@pytest.mark.parametrize(("sections", "expected"), EMPTY, ids=[",".join(s) for s, _ in EMPTY])
def test_an_empty_section_is_its_defaults_or_an_error_naming_its_keys(
    tmp_path: Path, sections: list[str], expected: list[str]
) -> None:
    """A section written with nothing after its colon (YAML null) is read as `{}`: its defaults where
    it has them, and where it has required keys, an error naming each, all at once."""
    raw = valid(tmp_path)
    empty, braces = raw, raw
    for section in sections:
        empty, braces = with_value(empty, section, None), with_value(braces, section, {})
    path = written(tmp_path, empty)
    if expected:
        message = refused(str(path), "--dry-run")
        assert all(key in message for key in expected), message
    else:
        result = run_cli("pipeline", str(path), "--dry-run")
        assert result.exit_code == 0, result.output
        assert read_pipeline(path) == read_pipeline(written(tmp_path, braces, "braces.yaml"))


@pytest.mark.parametrize("case", ["a file", "under a file", "records is a file", "a step's folder is a file"])
def test_a_workspace_that_is_not_a_folder_is_an_error_saying_to_choose_one(tmp_path: Path, case: str) -> None:
    """Refused before any step, with what to do: choose a folder (never `--redo`, which would fail
    the same way); the file is left as it was, and a folder chosen instead works."""
    ws = tmp_path / "ws"
    file = {"a file": ws, "under a file": ws, "records is a file": ws / "records"}.get(case, ws / "teacher")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("mine\n", encoding="utf-8")
    raw = valid(tmp_path)
    if case == "under a file":
        raw["workspace"] = str(ws / "inside")
    for args in ([], ["--dry-run"]):
        message = refused(str(written(tmp_path, raw)), *args)
        assert f"{file} is a file" in message and "--redo" not in message, message
        assert "choose" in message and "folder" in message, message
    assert file.read_text(encoding="utf-8") == "mine\n"
    raw["workspace"] = str(tmp_path / "a folder")
    result = run_cli("pipeline", str(written(tmp_path, raw)), "--dry-run")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("option", "name"),
    [("--until", ""), ("--until", "techer"), ("--until", "-"), ("--redo", ""), ("--redo", "studnt")],
)
def test_an_empty_or_unknown_step_name_is_an_error_listing_the_steps(
    tmp_path: Path, option: str, name: str
) -> None:
    path = written(tmp_path, valid(tmp_path))
    for args in ([], ["--dry-run"]):
        message = refused(str(path), option, name, *args)
        assert option in message and f"the steps: {', '.join(STEPS)}" in message, message
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize(
    ("where", "entry", "steps", "refused_for"),
    [
        ("steps.teacher.set", "run_dir=elsewhere", {}, ["teacher"]),
        ("training.set", "run_dir=elsewhere", {}, ["backward", "teacher", "student"]),
        ("steps.backward.set", "data.valid_src=other.de", {}, ["backward"]),
        ("training.set", "data={}", {}, ["backward", "teacher", "student"]),
        ("steps.student.set", "train.init_from=other.pt", {}, ["student"]),
        ("steps.teacher.set", "train.tokenizer_from=other", {"teacher": {"ensemble": 2}}, ["teacher_2"]),
        ("steps.teacher.set", 'tokenizer.control_tokens=["<x>"]', {}, ["teacher", "student"]),
        ("training.set", "train.seed=7", {"teacher": {"ensemble": 2}}, []),  # the first member's seed
        ("steps.student.set", "train.init_from=other.pt", {"student": {"shrink": False}}, []),
    ],
)
def test_a_set_entry_the_pipeline_owns_is_refused_naming_the_step_and_the_key(
    tmp_path: Path, where: str, entry: str, steps: dict[str, Any], refused_for: list[str]
) -> None:
    """What the pipeline sets itself (where a training writes its run, its data, an ensemble's shared
    tokenizer, a shrunk student's start, the back-translation tag) is refused in a `set`, at
    validation, and the file without it (as the error advises: leave it out) runs; any other key is
    the file's to set."""
    raw = valid(tmp_path)
    raw["steps"] |= steps
    node = raw["training"] if where == "training.set" else raw["steps"][where.split(".")[1]]
    node["set"] = [*node.get("set", []), entry]
    if refused_for:
        message = refused(str(written(tmp_path, raw)), "--dry-run")
        line = next(line for line in message.splitlines() if f"{where}: {entry.split('=')[0]}" in line)
        assert re.search(rf"\b{', '.join(refused_for)}\b", line) and "leave it out" in line, line
        node["set"].remove(entry)
    result = run_cli("pipeline", str(written(tmp_path, raw)), "--dry-run")
    assert result.exit_code == 0, result.output


INPUTS = {  # a pipeline input, stored where a step writes: (its key in the file, its path, the writer)
    "test set in export": ("data.test[0].src", "export/test.de", "step export"),
    "test set in evaluate": ("data.test[0].tgt", "evaluate/test.en", "step evaluate"),
    "mono is back_translation's": ("data.mono_tgt[0]", "back_translation/mono.en", "step back_translation"),
    "valid set in a run": ("data.valid.src", "teacher/valid.de", "step teacher"),
    "corpus in a choice": ("data.corpora[0].src", "select_teacher/train.de", "step select_teacher"),
    "base config in a run": ("training.base", "student/base.yaml", "step student"),
    "the pipeline file": ("the pipeline file", "export/pipeline.yaml", "step export"),
    "test set in records": ("data.test[0].src", "records/test.de", "s2s pipeline"),
    "a start in a run": ("steps.student: train.init_from", "teacher/checkpoints/best.pt", "step teacher"),
}


@pytest.mark.parametrize("case", list(INPUTS))
def test_an_input_where_a_step_writes_is_an_error_naming_both(tmp_path: Path, case: str) -> None:
    """Every path a step reads or writes is resolved and checked before the first step runs: an input
    inside a folder a step makes (or makes again: an export, a training run) or the same as a file a
    step writes is refused, naming the input and the step, and nothing is written or deleted. Kept
    out of there (as the error advises), the same input is taken."""
    key, inside, writer = INPUTS[case]
    raw, path = valid(tmp_path), tmp_path / "ws" / inside
    file = placed(tmp_path, raw, key, path)
    before = sorted(str(p) for p in (tmp_path / "ws").rglob("*"))
    for args in ([], ["--dry-run"]):
        message = refused(str(file), *args)
        line = next((line for line in message.splitlines()[1:] if str(path) in line), message)
        assert key in line and writer in line, message
    assert sorted(str(p) for p in (tmp_path / "ws").rglob("*")) == before and path.is_file()
    result = run_cli(
        "pipeline", str(placed(tmp_path, raw, key, tmp_path / "elsewhere" / inside)), "--dry-run"
    )
    assert result.exit_code == 0, result.output


def placed(tmp_path: Path, raw: dict[str, Any], key: str, path: Path) -> Path:
    """The pipeline file of `raw` with the input `key` (`training.base`, `data.test[0].src`, what the
    student starts from, the file itself) moved to `path`."""
    path.parent.mkdir(parents=True)
    if key == "the pipeline file":
        return written(path.parent, raw, path.name)
    if key == "steps.student: train.init_from":
        path.write_bytes(b"a checkpoint")
        raw["steps"]["student"] = {"set": [f"train.init_from={path}"]}
        return written(tmp_path, raw)
    *parents, last = [int(k) if k.isdigit() else k for k in re.findall(r"[a-z_]+|\d+", key)]
    node: Any = raw
    for name in parents:
        node = node[name]
    shutil.copyfile(node[last], path)
    node[last] = str(path)
    return written(tmp_path, raw)


@pytest.mark.parametrize("missing", ["data.test[0].src", "data.mono_src[0]", "data.valid.tgt"])
def test_every_input_is_there_before_the_first_step_runs(tmp_path: Path, missing: str) -> None:
    """An input that is not there is named before any step runs, even one only the last steps read."""
    raw = valid(tmp_path)
    gone = {
        "data.test[0].src": raw["data"]["test"][0]["src"],
        "data.mono_src[0]": raw["data"]["mono_src"][0],
        "data.valid.tgt": raw["data"]["valid"]["tgt"],
    }[missing]
    Path(gone).unlink()
    message = refused(str(written(tmp_path, raw)))
    assert "not all there" in message and gone in message, message
    assert not (tmp_path / "ws").exists()
