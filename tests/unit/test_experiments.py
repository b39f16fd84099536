"""The studies keep their shape: each folder of experiments/ has its README (the question, how to run
it, the results), is a package where it holds Python, and its files load; every run config and
pipeline file the repository ships loads as `s2s train` and `s2s pipeline FILE --dry-run` read it,
and no two of them write to the same run directory or workspace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from seq2seq.config import Config, load_config
from seq2seq.pipeline.config import read_pipeline
from seq2seq.pipeline.plan import check_pipeline
from tests.helpers import ROOT

STUDIES = sorted(p for p in (ROOT / "experiments").iterdir() if p.is_dir() and p.name != "__pycache__")
FILES = sorted(
    [
        *(ROOT / "configs").glob("*.yaml"),
        *(ROOT / "experiments").rglob("*.yaml"),
        *(ROOT / "examples").glob("*.yaml"),
    ]
)


def raw(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("study", STUDIES, ids=lambda p: p.name)
def test_each_study_has_its_readme_and_is_a_package_where_it_holds_python(study: Path) -> None:
    readme = study / "README.md"
    assert readme.is_file(), f"{name(study)}: no README.md"
    text = readme.read_text(encoding="utf-8")
    for part in (r"\A# ", r"^\*\*Question\.\*\*", r"^## Run it$", r"^## Results"):
        assert re.search(part, text, re.M), f"{name(readme)}: no {part}"
    if any(study.glob("*.py")):
        assert (study / "__init__.py").is_file(), (
            f"{name(study)}: python -m experiments.{study.name}.X needs it"
        )


@pytest.mark.parametrize("path", FILES, ids=name)
def test_each_run_config_and_pipeline_file_loads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # their paths are the repository's
    if "workspace" in raw(path):
        check_pipeline(read_pipeline(path))
    else:
        assert isinstance(load_config(path), Config)


def test_no_two_files_write_to_the_same_run_directory_or_workspace() -> None:
    written: dict[str, list[str]] = {}
    for path in FILES:
        found = raw(path)
        written.setdefault(found.get("workspace") or found["run_dir"], []).append(name(path))
    shared = {folder: files for folder, files in written.items() if len(files) > 1}
    assert shared == {}, "give each its own: " + "; ".join(f"{f}: {', '.join(p)}" for f, p in shared.items())
