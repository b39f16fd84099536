"""What a record claims is what is used, and every reader checks it: a file a record names that is
missing or changed since is an `error:` naming it (exit code 2), never used as it is found. The
records: an export's s2s.json (its files and shortlist), a prepared corpus's manifest (what its arrays
were made from, their sha256), the run's inputs.json (its training data) and what a checkpoint
records of its origin (model and tokenizer)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.checkpoint import load_checkpoint
from tests.conftest import TrainedRun, write_corpus
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def shortlisted(trained_run: Callable[[str], TrainedRun], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CTranslate2 export of the tiny run, with a shortlist (only read: a test damages a copy)."""
    export = tmp_path_factory.mktemp("export") / "ct2"
    result = run_cli("export", str(trained_run("tiny").run), str(export), "--shortlist", "5")
    assert result.exit_code == 0, result.output
    return export


def damaged_export(damage: Callable[[Path], object]) -> Callable[..., list[str]]:
    """Translating with a copy of the export, damaged by `damage`."""

    def command(run: TrainedRun, export: Path, tmp_path: Path) -> list[str]:
        copy = tmp_path / "export"
        shutil.copytree(export, copy)
        damage(copy)
        return ["translate", str(copy), "--engine", "ctranslate2", "--device", "cpu"]

    return command


def corrupt_array(run: TrainedRun, export: Path, tmp_path: Path) -> list[str]:
    """An array of the prepared corpus as long as the manifest says, with other bytes."""
    array = run.run / "prepared" / "train" / "train.src.ids"
    data = bytearray(array.read_bytes())
    data[10:14] = data[12:14] + data[10:12]
    array.write_bytes(bytes(data))
    return ["export", str(run.run), str(tmp_path / "out"), "--shortlist", "5"]


def prepared_from_other_text(run: TrainedRun, export: Path, tmp_path: Path) -> list[str]:
    """The prepared corpus, shared through data.prepared_dir, made again from another run's text."""
    other = yaml.safe_load(run.config.read_text(encoding="utf-8"))
    src, tgt = write_corpus(tmp_path, "other", 300, seed=5)
    other["run_dir"] = str(tmp_path / "other_run")
    other["data"] |= {"train_src": str(src), "train_tgt": str(tgt), "prepared_dir": str(run.run / "prepared")}
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    assert run_cli("prepare", str(tmp_path / "other.yaml")).exit_code == 0
    return ["export", str(run.run), str(tmp_path / "out"), "--shortlist", "5"]


def resumed_after(damage: Callable[[Path], object]) -> Callable[..., list[str]]:
    """Resuming the run, damaged by `damage`."""

    def command(run: TrainedRun, export: Path, tmp_path: Path) -> list[str]:
        damage(run.run)
        return ["train", str(run.config), "--resume", "--set", "train.max_steps=14"]

    return command


def rewrite_last(change: Callable[[dict], object]) -> Callable[[Path], None]:
    """last.pt with `change` made to what it holds (its record of where it came from)."""

    def damage(run: Path) -> None:
        state = load_checkpoint(run / "checkpoints" / "last.pt")
        change(state)
        (run / "checkpoints" / "last.pt").unlink()  # a link to step_12.pt: that one stays as it was
        torch.save(state, run / "checkpoints" / "last.pt")

    return damage


def change_bytes(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-8] + b"changed\n")


# record -> (the command its reader runs once the run or export is damaged, what the error names)
CASES = {
    "export: its shortlist deleted": (
        damaged_export(lambda e: (e / "vmap.txt").unlink()),
        "vmap.txt is missing",
    ),
    "export: its shortlist changed": (
        damaged_export(lambda e: change_bytes(e / "vmap.txt")),
        "vmap.txt changed",
    ),
    "export: its tokenizer changed": (
        damaged_export(lambda e: change_bytes(e / "tokenizer" / "spm.model")),
        "spm.model changed",
    ),
    "export: its weights changed": (
        damaged_export(lambda e: change_bytes(e / "model.bin")),
        "model.bin changed",
    ),
    "manifest: an array corrupted": (corrupt_array, "train.src.ids is corrupt"),
    "manifest: made from other text": (prepared_from_other_text, "its src file changed"),
    "inputs.json: deleted": (resumed_after(lambda r: (r / "inputs.json").unlink()), "inputs.json is missing"),
    "last.pt: records no origin": (
        resumed_after(rewrite_last(lambda s: s.pop("tokenizer_sha256"))),
        "records no config or tokenizer checksums",
    ),
    "last.pt: weights only": (
        resumed_after(lambda r: (r / "checkpoints" / "step_12.pt").replace(r / "checkpoints" / "last.pt")),
        "holds no optimizer",
    ),
    "last.pt: records another model": (
        resumed_after(rewrite_last(lambda s: s["config"]["model"].update(heads=4))),
        "model.heads: checkpoint 4, run 2",
    ),
}


@pytest.mark.parametrize(
    "case",
    # preparing another corpus trains a tokenizer of its own, in a process
    [pytest.param(c, marks=pytest.mark.slow) if c == "manifest: made from other text" else c for c in CASES],
)
def test_a_file_missing_or_changed_since_its_record_is_an_error_naming_it(
    run_copy: TrainedRun, shortlisted: Path, tmp_path: Path, case: str
) -> None:
    command, named = CASES[case]
    result = run_cli(*command(run_copy, shortlisted, tmp_path), input="red cat\n")
    assert result.exit_code == 2, result.output
    assert "error: " in result.output and named in result.output


def test_a_corrupt_prepared_corpus_is_made_again_by_the_advised_command(
    run_copy: TrainedRun, shortlisted: Path, tmp_path: Path
) -> None:
    """The refusal's advice (`s2s prepare CONFIG`, the run's config) makes the corpus whole again, and
    the export it refused then succeeds."""
    command = corrupt_array(run_copy, shortlisted, tmp_path)
    refused = run_cli(*command)
    assert refused.exit_code == 2 and "s2s prepare CONFIG" in refused.output, refused.output
    assert (prepared := run_cli("prepare", str(run_copy.config))).exit_code == 0, prepared.output
    assert (done := run_cli(*command)).exit_code == 0, done.output
