"""The setup path of `s2s train` and `s2s prepare`: plan -> claim -> prepare inputs, each check once."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.errors import DataError, RunDirError
from seq2seq.training import setup
from seq2seq.training.distributed import DistInfo
from seq2seq.training.request import prepare_request, run_mode, train_request
from seq2seq.training.setup import claim, make_inputs
from seq2seq.training.training_plan import plan_preparation, plan_training
from tests.conftest import tiny_config_dict
from tests.helpers import count_checksums


def write_config(tmp_path: Path) -> tuple[Path, dict]:
    raw = tiny_config_dict(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return config, raw


def test_resume_and_overwrite_together_are_refused():
    with pytest.raises(RunDirError, match="choose one of --resume and --overwrite"):
        run_mode(resume=True, overwrite=True)
    assert [run_mode(False, False), run_mode(True, False), run_mode(False, True)] == [
        "new",
        "resume",
        "overwrite",
    ]


def test_a_refused_plan_writes_nothing(tmp_path):
    config, raw = write_config(tmp_path)
    Path(raw["data"]["train_tgt"]).write_text("ONE\n", encoding="utf-8")
    with pytest.raises(DataError, match="must align"):
        plan_training(train_request(config, [], None, "new"), DistInfo())
    assert not Path(raw["run_dir"]).exists()


def test_training_reads_the_validation_files_in_its_plan_and_prepare_never_does(tmp_path):
    config, raw = write_config(tmp_path)
    plan, valid, _ = plan_training(train_request(config, [], "cpu", "new"), DistInfo())
    assert plan.mode == "new" and plan.cfg.train.device == "cpu" and plan.init is None
    assert [v.src for v in valid] == [Path(raw["data"]["valid_src"]).read_text().splitlines()]
    Path(raw["data"]["valid_tgt"]).write_text("ONE\n", encoding="utf-8")
    assert plan_preparation(prepare_request(config, [])).mode == "new"  # `s2s prepare` does not validate
    with pytest.raises(DataError, match="must align"):
        plan_training(train_request(config, [], None, "new"), DistInfo())


@pytest.mark.parametrize(
    ("name", "info", "expected"),
    [
        ("cpu", DistInfo(), "cpu"),
        ("auto", DistInfo(rank=3, world=4, local_rank=3), "cuda:3"),
    ],
)
def test_the_plan_resolves_the_device_this_process_trains_on(tmp_path, monkeypatch, name, info, expected):
    """Once, where the command starts: under torchrun, the GPU of the process's local rank."""
    config, _ = write_config(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert plan_training(train_request(config, [], name, "new"), info)[2] == torch.device(expected)


def test_prepare_plans_to_resume_a_started_run(tmp_path):
    config, raw = write_config(tmp_path)
    plan, _, _ = plan_training(train_request(config, [], None, "new"), DistInfo())
    with claim(plan, DistInfo()):
        pass
    (Path(raw["run_dir"]) / "checkpoints").mkdir()
    (Path(raw["run_dir"]) / "checkpoints" / "last.pt").write_bytes(b"")
    assert plan_preparation(prepare_request(config, [])).mode == "resume"


@pytest.mark.slow
def test_each_input_is_checksummed_once(tmp_path, monkeypatch):
    config, raw = write_config(tmp_path)
    hashed = count_checksums(monkeypatch)
    plan, valid, _ = plan_training(train_request(config, [], None, "new"), DistInfo())
    with claim(plan, DistInfo()) as claimed:
        inputs = make_inputs(claimed, valid, DistInfo())
    assert inputs.tokenizer_sums == plan.run.read_inputs()["tokenizer"]
    assert len(inputs.valid[0].src_lines) == 20
    assert hashed == {"train.src": 1, "train.tgt": 1, "valid.src": 1, "valid.tgt": 1, "spm.model": 1}


def test_overwrite_removes_the_old_run_only_after_the_claim_checks(tmp_path, monkeypatch):
    config, raw = write_config(tmp_path)
    plan, _, _ = plan_training(train_request(config, [], None, "new"), DistInfo())
    with claim(plan, DistInfo()):
        pass
    last = plan.run.checkpoint_dir / "last.pt"
    last.parent.mkdir()
    last.write_bytes(b"the old run")

    def unreadable(cfg: object) -> dict[str, str]:
        raise PermissionError(13, "Permission denied", raw["data"]["train_src"])

    monkeypatch.setattr(setup, "data_checksums", unreadable)
    overwrite, _, _ = plan_training(train_request(config, [], None, "overwrite"), DistInfo())
    with pytest.raises(PermissionError), claim(overwrite, DistInfo()):
        pass
    assert last.read_bytes() == b"the old run" and plan.run.config_file.is_file()
