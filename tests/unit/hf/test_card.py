"""The model card of a Hugging Face export lists its evaluation results as the Hub's `model-index`,
read back here with huggingface_hub's own card classes: the `s2s evaluate` records of the exported
checkpoint where the run holds them, else the run's best validation BLEU."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from huggingface_hub import ModelCard, metadata_load
from huggingface_hub.repocard_data import model_index_to_eval_results

from seq2seq.config import config_from_dict
from seq2seq.hf.card import model_card

SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"


def run_dir(tmp_path: Path) -> tuple[Path, Path]:
    """A run directory with a checkpoint and two validations (only what the card reads)."""
    run = tmp_path / "de_en"
    (run / "checkpoints").mkdir(parents=True)
    checkpoint = run / "checkpoints" / "best.pt"
    checkpoint.write_bytes(b"the weights")
    valid = [
        {"kind": "valid", "step": s, "valid_bleu": b, "bleu_signature": SIGNATURE}
        for s, b in ((50, 20.5), (100, 31.25))
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in valid), encoding="utf-8")
    return run, checkpoint


def record(run: Path, checkpoint_bytes: bytes, reference: str, bleu: float) -> dict:
    """An `s2s evaluate --json` record, in the shape `evaluation.record.evaluation_record` writes."""
    sha = hashlib.sha256(checkpoint_bytes).hexdigest()
    scores = {
        "bleu": {"name": "BLEU", "score": bleu, "signature": SIGNATURE, "summary": ""},
        "chrf": {"name": "chrF2", "score": 60.125, "signature": "nrefs:1|case:mixed|nc:6", "summary": ""},
    }
    return {
        "created": "2026-12-05T00:00:00+00:00",
        "references": [{"path": reference, "sha256": "0", "lines": 1000}],
        "systems": [{"name": "hyp", "path": "hyp", "scores": scores}],
        "model": {"run_dir": str(run), "checkpoint": {"sha256": sha}, "checkpoints": [{"sha256": sha}]},
    }


def config(run: Path):
    data = {"train_src": "train.src", "train_tgt": "train.tgt", "valid_src": "val.de", "valid_tgt": "val.en"}
    return config_from_dict({"run_dir": str(run), "data": data, "train": {"max_steps": 10}})


def results(card_text: str, tmp_path: Path) -> list:
    tmp_path.mkdir()
    path = tmp_path / "README.md"
    path.write_text(card_text, encoding="utf-8")
    card = ModelCard.load(path)
    name, found = model_index_to_eval_results(metadata_load(path)["model-index"])
    assert name == "de_en" and card.data.eval_results == found
    return found


def test_the_card_lists_each_evaluation_of_the_exported_checkpoint(tmp_path: Path) -> None:
    run, checkpoint = run_dir(tmp_path)
    test = record(run, b"the weights", "/data/test_2016_flickr.en.gz", 40.1634)
    upper = {"name": "BLEU", "score": 21.5, "signature": SIGNATURE, "summary": ""}
    test["augmented"] = [{"modifier": "upper", "seed": 1, "scores": {"bleu": upper}}]  # evaluate --augment
    (run / "test.json").write_text(json.dumps(test), encoding="utf-8")
    other = record(run, b"other weights", "/data/test_2017_flickr.en", 12.0)  # another checkpoint's
    (run / "eval").mkdir()
    (run / "eval" / "other.json").write_text(json.dumps(other), encoding="utf-8")
    found = results(model_card(config(run), run, checkpoint), tmp_path / "card")
    assert [(r.dataset_name, r.dataset_split, r.metric_type, r.metric_value) for r in found] == [
        ("test_2016_flickr", "test", "bleu", 40.16),
        ("test_2016_flickr", "test", "chrf", 60.12),
        ("test_2016_flickr (upper)", "test", "bleu", 21.5),
    ]
    assert found[2].dataset_config == "upper" and found[2].dataset_args == {"seed": 1}
    assert all(r.task_type == "translation" for r in found)
    assert found[0].metric_args == {"signature": SIGNATURE}


def test_without_a_record_the_card_gives_the_best_validation_bleu(tmp_path: Path) -> None:
    run, checkpoint = run_dir(tmp_path)
    text = model_card(config(run), run, checkpoint)
    found = results(text, tmp_path / "card")
    assert [(r.dataset_name, r.dataset_split, r.metric_type, r.metric_value) for r in found] == [
        ("val", "validation", "bleu", 31.25)
    ]
    assert (
        "validation BLEU during training: 31.25 at step 100" in text and "`train.src` → `train.tgt`" in text
    )
