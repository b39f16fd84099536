"""An imported MarianMT model fine-tuned: its run's config.yaml, data pointed at real files and
`train.init_from` at the run, trains from the imported weights, and the result translates."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.batching import pad
from seq2seq.checkpoint import load_checkpoint
from seq2seq.commands.import_model import import_model
from seq2seq.commands.jobs import ImportJob
from seq2seq.special import BOS, EOS, PAD
from seq2seq.translate.weights import load_weights
from tests.helpers import cli_translate, run_cli
from tests.unit.hf.marian_models import SOURCE_LINES, TARGET_LINES, MarianKind, make_marian

pytestmark = pytest.mark.slow


def tuned_config(tmp_path: Path, **train: object) -> tuple[Path, Path]:
    """A tiny random MarianMT model imported into tmp_path/imported, and a config fine-tuning it on
    its own lines into tmp_path/tuned (the imported run's config.yaml, data and train.init_from set):
    (the imported run, the config)."""
    imported = tmp_path / "imported"
    import_model(ImportJob(make_marian(tmp_path / "hf", MarianKind()), imported))
    files = {"train_src": SOURCE_LINES * 8, "train_tgt": TARGET_LINES * 8}
    files |= {"valid_src": SOURCE_LINES, "valid_tgt": TARGET_LINES}
    cfg = yaml.safe_load((imported / "config.yaml").read_text(encoding="utf-8"))
    for key, lines in files.items():
        (tmp_path / key).write_text("\n".join(lines) + "\n", encoding="utf-8")
        cfg["data"][key] = str(tmp_path / key)
    cfg["run_dir"] = str(tmp_path / "tuned")
    cfg["train"] |= {"init_from": str(imported), "device": "cpu", "precision": "fp32", **train}
    (tmp_path / "tuned.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return imported, tmp_path / "tuned.yaml"


def test_an_imported_run_fine_tunes_from_its_weights(tmp_path: Path):
    imported, config = tuned_config(tmp_path, max_steps=6, warmup_steps=2, valid_every=6)
    result = run_cli("train", str(config))
    assert result.exit_code == 0, result.output
    before = load_checkpoint(imported / "checkpoints" / "best.pt")["model"]
    after = load_checkpoint(tmp_path / "tuned" / "checkpoints" / "last.pt")["model"]
    assert before.keys() == after.keys() and "output.bias" in after
    assert not torch.equal(before["encoder.0.attn.qkv.weight"], after["encoder.0.attn.qkv.weight"])
    assert len(cli_translate(tmp_path / "tuned", SOURCE_LINES[:3], "--beam", "2")) == 3


def test_lora_on_an_imported_run_exports_merged_to_transformers(tmp_path: Path):
    """Adapters trained on an imported MarianMT model: the Hugging Face export holds the merged
    weights, and transformers computes from it the logits s2s computes from the run."""
    transformers = pytest.importorskip("transformers", reason="transformers is an optional extra: s2s[hf]")
    lora = {"rank": 2, "alpha": 4}
    imported, config = tuned_config(tmp_path, max_steps=4, warmup_steps=1, valid_every=4, lr=0.05, lora=lora)
    assert run_cli("train", str(config)).exit_code == 0
    export = tmp_path / "export"
    result = run_cli("export", str(tmp_path / "tuned"), str(export), "--format", "huggingface")
    assert result.exit_code == 0, result.output
    ours = load_weights(tmp_path / "tuned").first
    before = load_weights(imported).first.state_dict()["encoder.0.attn.qkv.weight"]
    assert not torch.equal(ours.state_dict()["encoder.0.attn.qkv.weight"], before)
    theirs = transformers.AutoModelForSeq2SeqLM.from_pretrained(export).eval()
    tokenizers = load_weights(tmp_path / "tuned").tokenizers
    src = pad([[*ids, EOS] for ids in tokenizers.src.encode(SOURCE_LINES)])
    tgt = pad([[BOS, *ids] for ids in tokenizers.tgt_tokenizer.encode(TARGET_LINES)])
    with torch.no_grad():
        expected = ours(src, tgt)
        got = theirs(input_ids=src, attention_mask=(src != PAD).long(), decoder_input_ids=tgt).logits
    real = tgt != PAD
    torch.testing.assert_close(got[real], expected[real], rtol=1e-4, atol=1e-4)
