"""Everything is validated before side effects: every number of the config finite and in range,
what the libraries would refuse checked at load, all before `--overwrite` deletes anything; a
diverging run stops saving nothing new."""

from __future__ import annotations

import dataclasses
import typing

import pytest
import yaml

from seq2seq.config import Config, load_config
from seq2seq.errors import ConfigError
from tests.conftest import tiny_config_dict
from tests.helpers import run_cli, run_process, tree_digest


def float_keys() -> list[str]:
    """Every float setting of `Config` as a dotted key (`train.lr`), read from its dataclasses, so a new
    one is tested without being listed."""
    keys = []
    for section, kind in typing.get_type_hints(Config).items():
        if dataclasses.is_dataclass(kind):  # run_dir is a plain value
            hints = typing.get_type_hints(kind).items()
            keys += [f"{section}.{key}" for key, hint in hints if float in (hint, *typing.get_args(hint))]
    return keys


FLOAT_KEYS = float_keys()


def test_the_float_settings_are_found_in_every_section():
    """A derivation that found nothing would make the test below pass vacuously."""
    sections = {key.split(".")[0] for key in FLOAT_KEYS}
    assert sections == {"data", "tokenizer", "model", "train", "decode"}
    assert {"train.lr", "model.dropout", "decode.max_len_a"} <= set(FLOAT_KEYS)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "nan"])
@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_non_finite_numbers_are_refused_at_load(tmp_path, key, value):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)))
    with pytest.raises(ConfigError, match=f"{key}: must be a finite number"):
        load_config(config, [f"{key}={value}"])


@pytest.mark.parametrize(
    "override",
    [
        "tokenizer.character_coverage=0.5",  # SentencePiece refuses it, after the run was deleted
        "train.weight_decay=-1",  # AdamW refuses it
        "train.seed=-1",
        "train.lr=.nan",
        "tokenizer.vocab_size=99999999999",
        "train.num_threads=100000",
    ],
)
def test_values_the_libraries_refuse_fail_before_overwrite_deletes_anything(run_copy, override):
    config, run = run_copy.config, run_copy.run
    before = tree_digest(run)
    result = run_cli("train", str(config), "--overwrite", "--set", override)
    assert result.exit_code == 2, result.output
    assert override.split("=")[0] in result.output
    assert tree_digest(run) == before


@pytest.mark.slow
def test_a_config_that_is_not_utf8_is_a_clear_error(tmp_path):
    config = tmp_path / "c.yaml"
    text = yaml.safe_dump(tiny_config_dict(tmp_path)).replace("run_dir:", "# Übersetzung\nrun_dir:")
    config.write_bytes(text.encode("latin-1"))
    result = run_process("train", str(config))
    assert result.returncode == 2
    assert f"{config}: line ".encode() in result.stderr and b"is not valid UTF-8" in result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.slow
def test_a_diverging_run_stops_without_saving(tmp_path, monkeypatch):
    """A non-finite loss stops training with exit 2; no checkpoint or metric holds the diverged state."""
    from seq2seq.training.loss import TrainingLoss

    real_loss, calls = TrainingLoss.forward, []

    def loss_that_explodes(*args, **kwargs):
        calls.append(1)
        loss = real_loss(*args, **kwargs)
        return loss * float("nan") if len(calls) > 8 else loss

    monkeypatch.setattr(TrainingLoss, "forward", loss_that_explodes)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path, max_steps=12, valid_every=6, log_every=4)))
    result = run_cli("train", str(config))
    assert result.exit_code == 2, result.output
    assert "training diverged" in result.output and "train.lr" in result.output
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.pt", "last.pt", "step_6.pt"]
    assert "nan" not in (run / "metrics.jsonl").read_text().lower()


@pytest.mark.slow
@pytest.mark.parametrize(
    "model_heads, message",
    [
        ("[" + ", ".join(["*l4"] * 9) + "]", "expand to more than"),  # an anchor bomb: 9 ** 6 values
        ("[" * 20_000 + "]" * 20_000, "nested more than"),
    ],
    ids=["anchor bomb", "20,000 levels"],
)
def test_a_config_that_expands_or_nests_without_bound_is_a_clear_error(tmp_path, model_heads, message):
    raw = tiny_config_dict(tmp_path)
    levels = 5 if "*" in model_heads else 0  # l4 stands for 9 ** 5 values, each made of 9 aliases
    bomb = "".join(
        f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else "x"] * 9) + "]\n" for i in range(levels)
    )
    config = tmp_path / "c.yaml"
    config.write_text(f"defs:\n{bomb}{yaml.safe_dump(raw)}".replace("  heads: 2", f"  heads: {model_heads}"))
    assert f"heads: {model_heads[:5]}" in config.read_text()
    result = run_process("train", str(config))
    assert result.returncode == 2, result.stderr.decode()
    line = config.read_text().splitlines().index(f"  heads: {model_heads}") + 1
    assert f"error: {config}: line {line}: ".encode() in result.stderr and message.encode() in result.stderr
    assert b"Traceback" not in result.stderr and not (tmp_path / "run").exists()
