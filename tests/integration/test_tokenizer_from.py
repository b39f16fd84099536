"""`train.tokenizer_from`: a run takes another run's tokenizer instead of training its own, so the
two runs' checkpoints decode together as an ensemble (an s2s pipeline's teachers); a tokenizer made
with other settings, or fine-tuning as well, is refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seq2seq.files import file_sha256
from tests.conftest import TrainedRun
from tests.helpers import cli_translate, run_cli

pytestmark = pytest.mark.slow


def second_run(tiny_run: TrainedRun, tmp_path: Path, **changes: dict) -> tuple[Path, Path]:
    """The tiny config for a second run with another seed and the tiny run's tokenizer, changed."""
    raw = yaml.safe_load(tiny_run.config.read_text(encoding="utf-8"))
    raw["run_dir"] = str(tmp_path / "second")
    raw["train"] |= {"seed": 2, "max_steps": 6, "valid_every": 6, "tokenizer_from": str(tiny_run.run)}
    for section, values in changes.items():
        raw[section] |= values
    config = tmp_path / "second.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return config, tmp_path / "second"


def test_a_run_with_anothers_tokenizer_ensembles_with_it(tiny_run: TrainedRun, tmp_path: Path) -> None:
    config, run = second_run(tiny_run, tmp_path)
    result = run_cli("train", str(config))
    assert result.exit_code == 0, result.output
    assert file_sha256(run / "tokenizer" / "spm.model") == file_sha256(
        tiny_run.run / "tokenizer" / "spm.model"
    )
    lines = ["red cat runs", "", "blue bird"]
    both = ("--checkpoint", "best", "--checkpoint", str(run / "checkpoints" / "best.pt"))
    assert len(cli_translate(tiny_run.run, lines, *both)) == len(lines)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"tokenizer": {"vocab_size": 70}},
            "train.tokenizer_from: its tokenizer was made with other settings",
        ),
        ({"train": {"init_from": "elsewhere"}}, "train.tokenizer_from: a fine-tuned run (train.init_from)"),
    ],
)
def test_another_tokenizer_or_fine_tuning_is_refused_before_a_write(
    tiny_run: TrainedRun, tmp_path: Path, changes: dict, message: str
) -> None:
    config, run = second_run(tiny_run, tmp_path, **changes)
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and message in result.output, result.output
    assert not run.exists() or not any(run.iterdir())
