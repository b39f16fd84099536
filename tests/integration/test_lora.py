"""LoRA fine-tuning (train.lora): adapters trained beside frozen weights, saved alone, merged on read."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.checkpoint import atomic_save, inference_weights, load_checkpoint
from seq2seq.translate.weights import load_weights
from tests.conftest import TrainedRun
from tests.helpers import run_cli
from tests.integration.test_finetune import finetune_config
from tests.integration.test_training import train_losses

LORA = {"rank": 4, "alpha": 8, "dropout": 0.1}


def lora_config(tmp_path: Path, general: Path, name: str = "run", **train: object) -> Path:
    """Fine-tune the tiny run with adapters, into tmp_path/name."""
    config = finetune_config(tmp_path, general, **{"max_steps": 6, "valid_every": 3, "lr": 1e-2, **train})
    raw = yaml.safe_load(config.read_text())
    raw["run_dir"] = str(tmp_path / name)
    raw["train"].setdefault("lora", LORA)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def test_adapters_train_the_frozen_weights_are_saved_once_and_readers_merge_them(tiny_run, tmp_path):
    general = tiny_run.run
    assert run_cli("train", str(lora_config(tmp_path, general))).exit_code == 0
    checkpoints = tmp_path / "run" / "checkpoints"
    start = inference_weights(load_checkpoint(general / "checkpoints" / "best.pt"))
    base = load_checkpoint(checkpoints / "base.pt")["model"]
    assert base.keys() == start.keys() and all(torch.equal(base[k], start[k]) for k in base)
    last = load_checkpoint(checkpoints / "last.pt")
    assert last["model"] and all(k.endswith((".lora_a", ".lora_b")) for k in last["model"])
    # every projection of every layer's attention and feed-forward, none else
    projections = {k.rsplit(".", 1)[0] for k in last["model"]}
    assert projections == {
        "encoder.0.attn.qkv", "encoder.0.attn.out", "encoder.0.ffn.up", "encoder.0.ffn.down",
        "decoder.0.self_attn.qkv", "decoder.0.self_attn.out", "decoder.0.cross_attn.q",
        "decoder.0.cross_attn.kv", "decoder.0.cross_attn.out", "decoder.0.ffn.up", "decoder.0.ffn.down",
    }  # fmt: skip
    assert sum(p.numel() for p in last["model"].values()) < sum(p.numel() for p in start.values()) / 2
    merged = inference_weights(last, checkpoints / "last.pt")
    assert merged.keys() == start.keys()
    changed = {k for k in merged if not torch.equal(merged[k], start[k])}
    # only the adapted projections' weights moved: embeddings, norms and biases are frozen
    assert changed == {f"{p}.weight" for p in projections}
    model = load_weights(tmp_path / "run", ["last"]).first
    assert all(torch.equal(v, merged[k]) for k, v in model.state_dict().items())


def test_a_lora_run_resumes_exactly(tiny_run, tmp_path):
    general = tiny_run.run
    assert run_cli("train", str(lora_config(tmp_path, general, "whole"))).exit_code == 0
    parts = lora_config(tmp_path, general, "parts")
    assert run_cli("train", str(parts), "--set", "train.max_steps=4").exit_code == 0
    assert run_cli("train", str(parts), "--resume").exit_code == 0
    assert train_losses(tmp_path / "parts") == train_losses(tmp_path / "whole")
    whole = load_checkpoint(tmp_path / "whole" / "checkpoints" / "last.pt")["model"]
    parts_last = load_checkpoint(tmp_path / "parts" / "checkpoints" / "last.pt")["model"]
    assert all(torch.equal(whole[k], parts_last[k]) for k in whole)


def test_changing_lora_on_resume_is_refused_and_changes_nothing(tiny_run, tmp_path):
    config = lora_config(tmp_path, tiny_run.run, max_steps=3)
    assert run_cli("train", str(config)).exit_code == 0
    last = tmp_path / "run" / "checkpoints" / "last.pt"
    before = last.read_bytes()
    result = run_cli(
        "train", str(config), "--resume", "--set", "train.lora.rank=8", "--set", "train.max_steps=6"
    )
    assert result.exit_code == 2 and "train.lora cannot change" in result.output
    assert "Traceback" not in result.output and last.read_bytes() == before


def test_exports_and_translation_read_the_merged_weights(tiny_run, tmp_path):
    config = lora_config(tmp_path, tiny_run.run, max_steps=3)
    assert run_cli("train", str(config)).exit_code == 0
    run = tmp_path / "run"
    source = str(tiny_run.data / "valid.src")
    # an averaged checkpoint of one is the merged weights as an ordinary checkpoint
    assert run_cli("average", str(run), "--last", "1", "--output", "merged").exit_code == 0
    assert "adapters" not in load_checkpoint(run / "checkpoints" / "merged.pt")
    out = {}
    for name in ("last", "merged"):
        result = run_cli("translate", str(run), "--checkpoint", name, "--engine", "s2s", "-i", source)
        assert result.exit_code == 0, result.output
        out[name] = result.stdout
    assert out["last"] == out["merged"]
    pytest.importorskip("ctranslate2", reason="CTranslate2 publishes no wheel for this platform")
    from seq2seq.ct2.runtime import CT2Translator
    from seq2seq.translate.placement import Placement
    from seq2seq.translate.translator import Translator
    from tests.integration.test_engines import request_of

    export = tmp_path / "ct2"
    result = run_cli("export", str(run), str(export), "--checkpoint", "last")
    assert result.exit_code == 0, result.output
    lines = (tiny_run.data / "valid.src").read_text().splitlines()
    engines = [
        Translator.load(run, ["last"], Placement("cpu", "fp32")),
        CT2Translator.load(export, Placement("cpu")),
    ]
    own, ct2 = (e.translate(lines, request_of(e, beam=2)) for e in engines)
    assert [t.texts for t in own] == [t.texts for t in ct2]


@pytest.mark.parametrize("damage", ["missing", "another run's"])
def test_a_lora_checkpoint_without_its_own_base_is_a_clear_error(tiny_run, tmp_path, damage):
    config = lora_config(tmp_path, tiny_run.run, max_steps=3)
    assert run_cli("train", str(config)).exit_code == 0
    base = tmp_path / "run" / "checkpoints" / "base.pt"
    if damage == "missing":
        base.unlink()
    else:  # weights the adapters were not trained beside, e.g. copied from another LoRA run
        state = load_checkpoint(base)
        atomic_save({**state, "base_id": "0" * 32}, base)
    result = run_cli("translate", str(tmp_path / "run"), "-i", str(tiny_run.data / "valid.src"))
    expected = "base.pt, are missing" if damage == "missing" else "trained beside other weights"
    assert result.exit_code == 2 and expected in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("lora", "message"),
    [
        ({"rank": 4, "targets": ["attention"]}, "train.lora.targets: attention is not one of"),
        ({"rank": -1}, "train.lora.rank: must be in"),
        ({"rank": 4, "alpha": 0}, "train.lora.alpha: must be > 0"),
    ],
)
def test_bad_lora_settings_are_refused(tiny_run, tmp_path, lora, message):
    result = run_cli("train", str(lora_config(tmp_path, tiny_run.run, lora=lora)))
    assert result.exit_code == 2 and message in result.output


def test_lora_needs_weights_to_adapt(tmp_path):
    from tests.conftest import tiny_config_dict

    raw = tiny_config_dict(tmp_path)
    raw["train"]["lora"] = LORA
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and "set train.init_from" in result.output


def test_translate_reads_the_base_as_a_checkpoint(tiny_run: TrainedRun, tmp_path):
    config = lora_config(tmp_path, tiny_run.run, max_steps=1, lr=1e-12, warmup_steps=1, schedule="constant")
    assert run_cli("train", str(config)).exit_code == 0
    source = str(tiny_run.data / "valid.src")
    before = run_cli("translate", str(tiny_run.run), "-i", source)
    base = run_cli("translate", str(tmp_path / "run"), "--checkpoint", "base", "-i", source)
    assert before.exit_code == base.exit_code == 0
    assert before.stdout == base.stdout


def test_resuming_beside_other_base_weights_is_refused_and_overwrite_starts_over(tiny_run, tmp_path):
    config = lora_config(tmp_path, tiny_run.run, max_steps=2)
    assert run_cli("train", str(config)).exit_code == 0
    base = tmp_path / "run" / "checkpoints" / "base.pt"
    atomic_save({**load_checkpoint(base), "base_id": "0" * 32}, base)  # not the weights last.pt adapts
    result = run_cli("train", str(config), "--resume", "--set", "train.max_steps=4")
    assert result.exit_code == 2 and "holds no LoRA adapters of this run's" in result.output
    assert "--overwrite" in result.output and "Traceback" not in result.output
    assert run_cli("train", str(config), "--overwrite").exit_code == 0  # the advice
    assert load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["progress"]["step"] == 2
