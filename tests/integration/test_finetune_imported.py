"""An imported MarianMT model fine-tuned: its run's config.yaml, data pointed at real files and
`train.init_from` at the run, trains from the imported weights, and the result translates."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.checkpoint import load_checkpoint
from seq2seq.commands.import_model import import_model
from seq2seq.commands.jobs import ImportJob
from tests.helpers import cli_translate, run_cli
from tests.unit.hf.marian_models import SOURCE_LINES, TARGET_LINES, MarianKind, make_marian

pytestmark = pytest.mark.slow


def test_an_imported_run_fine_tunes_from_its_weights(tmp_path: Path):
    imported = tmp_path / "imported"
    import_model(ImportJob(make_marian(tmp_path / "hf", MarianKind()), imported))
    files = {"train_src": SOURCE_LINES * 8, "train_tgt": TARGET_LINES * 8}
    files |= {"valid_src": SOURCE_LINES, "valid_tgt": TARGET_LINES}
    cfg = yaml.safe_load((imported / "config.yaml").read_text(encoding="utf-8"))
    for key, lines in files.items():
        (tmp_path / key).write_text("\n".join(lines) + "\n", encoding="utf-8")
        cfg["data"][key] = str(tmp_path / key)
    cfg["run_dir"] = str(tmp_path / "tuned")
    cfg["train"] |= {"init_from": str(imported), "max_steps": 6, "warmup_steps": 2, "valid_every": 6}
    cfg["train"] |= {"device": "cpu", "precision": "fp32"}
    (tmp_path / "tuned.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    result = run_cli("train", str(tmp_path / "tuned.yaml"))
    assert result.exit_code == 0, result.output
    before = load_checkpoint(imported / "checkpoints" / "best.pt")["model"]
    after = load_checkpoint(tmp_path / "tuned" / "checkpoints" / "last.pt")["model"]
    assert before.keys() == after.keys() and "output.bias" in after
    assert not torch.equal(before["encoder.0.attn.qkv.weight"], after["encoder.0.attn.qkv.weight"])
    assert len(cli_translate(tmp_path / "tuned", SOURCE_LINES[:3], "--beam", "2")) == 3
