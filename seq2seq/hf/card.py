"""The model card (`README.md`) of a Hugging Face export: where the model came from, how well it did,
how to run it.

Its evaluation results are the Hub's `model-index` metadata, so the Hub (and `huggingface_hub`'s
`ModelCard`) reads them: each `s2s evaluate --json` record in the run directory that scored the
exported checkpoint itself (by sha256) gives one result per metric and test set; a run without such
a record gives its best validation BLEU from `metrics.jsonl`. The card is written with PyYAML alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from seq2seq import __version__
from seq2seq.config import Config
from seq2seq.files import file_sha256
from seq2seq.run.layout import RunDir

TESTED_TRANSFORMERS = "5.24.0"  # the version the export's equality tests ran against
NOT_RECORDS = {"checkpoints", "prepared", "tokenizer", "tensorboard", ".s2s-previous"}  # run files
COMPRESSED = (".gz", ".xz", ".bz2", ".zst")


def dataset_name(path: str) -> str:
    """`test_2016_flickr` of `.../test_2016_flickr.en.gz`: the file's name without language or
    compression suffix."""
    name = Path(path).name
    name = next((name[: -len(s)] for s in COMPRESSED if name.endswith(s)), name)
    return name.rsplit(".", 1)[0] if "." in name else name


def evaluation_records(run_dir: Path, checkpoint: Path) -> list[dict[str, Any]]:
    """The `s2s evaluate --json` records under `run_dir` made by this run with `checkpoint` alone (no
    ensemble), the newest per test set first seen."""
    wanted = file_sha256(checkpoint)
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(run_dir.rglob("*.json")):
        if NOT_RECORDS & set(path.relative_to(run_dir).parts[:-1]):
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        model = record.get("model") if isinstance(record, dict) else None
        if not (isinstance(model, dict) and record.get("systems") and record.get("references")):
            continue
        if [c.get("sha256") for c in model.get("checkpoints") or []] != [wanted]:
            continue
        name = dataset_name(record["references"][0]["path"])
        if name not in found or record.get("created", "") > found[name].get("created", ""):
            found[name] = record
    return [found[name] for name in sorted(found)]


def metrics_of(scored: dict[str, Any]) -> list[dict[str, Any]]:
    """A record's scores (of a system, or of a modified set) as model-index metrics."""
    return [
        {"type": key, "value": round(s["score"], 2), "name": s["name"], "args": {"signature": s["signature"]}}
        for key, s in scored["scores"].items()
    ]


def model_index(
    run_name: str, records: list[dict[str, Any]], valid: dict[str, Any] | None, valid_set: str
) -> list[dict[str, Any]]:
    """The `model-index` entry: one result per test set (its metrics), else the validation BLEU."""
    results = []
    for record in records:
        name = dataset_name(record["references"][0]["path"])
        results.append(
            {
                "dataset": {"name": name, "type": name, "split": "test"},
                "metrics": metrics_of(record["systems"][0]),
            }
        )
        for modified in record.get("augmented") or []:  # `s2s evaluate --augment`: the set modified one way
            how = modified["modifier"]
            dataset = {"name": f"{name} ({how})", "type": name, "config": how, "split": "test"}
            results.append(
                {"dataset": dataset | {"args": {"seed": modified["seed"]}}, "metrics": metrics_of(modified)}
            )
    if not results and valid is not None:
        signature = valid.get("bleu_signature", "not recorded")
        metric = {"type": "bleu", "value": round(valid["valid_bleu"], 2), "name": "validation BLEU"}
        dataset = {"name": valid_set, "type": valid_set, "split": "validation"}
        results.append({"dataset": dataset, "metrics": [metric | {"args": {"signature": signature}}]})
    task = {"type": "translation", "name": "Translation"}
    return [{"name": run_name, "results": [{"task": task} | r for r in results]}] if results else []


def escaped(signature: str) -> str:
    """A sacreBLEU signature in a Markdown table cell, whose `|` would end the cell."""
    return signature.replace("|", "\\|")


def quality_text(records: list[dict[str, Any]], valid: dict[str, Any] | None, search: str) -> str:
    """The card's section on quality, for people: the same numbers as the metadata."""
    if records:
        rows = ["| test set | metric | score | signature |", "|---|---|---|---|"]
        for record in records:
            name = dataset_name(record["references"][0]["path"])
            sets = [(name, record["systems"][0])]
            sets += [(f"{name} ({m['modifier']})", m) for m in record.get("augmented") or []]
            rows += [
                f"| {label} | {s['name']} | {s['score']:.2f} | `{escaped(s['signature'])}` |"
                for label, scored in sets
                for s in scored["scores"].values()
            ]
        return "Scored by `s2s evaluate` with this checkpoint:\n\n" + "\n".join(rows)
    if valid is None:
        return "No evaluation or validation BLEU was recorded."
    return (
        f"Best validation BLEU during training: {valid['valid_bleu']:.2f} at step {valid['step']} ({search}; "
        f"sacreBLEU `{valid.get('bleu_signature', 'signature not recorded')}`). Score a test set with "
        "`s2s evaluate RUN --src ... --ref ... --json RUN/test.json`, and export again, to list it here."
    )


def model_card(config: Config, run_dir: Path, checkpoint: Path) -> str:
    """README.md: the metadata (with `model-index`), the training data, the quality and the use."""
    valid = [r for r in RunDir(run_dir).read_metrics() if r.get("kind") == "valid" and "valid_bleu" in r]
    best = max(valid, key=lambda r: r["valid_bleu"], default=None)
    records = evaluation_records(run_dir, checkpoint)
    valid_set = dataset_name(
        config.data.valid_tgt or (config.data.valid[0].tgt if config.data.valid else "val")
    )
    metadata: dict[str, Any] = {"library_name": "transformers", "tags": ["translation", "s2s"]}
    index = model_index(run_dir.name, records, best, valid_set)
    if index:
        metadata["model-index"] = index
    corpora = [f"- `{c.src or c.tsv}` → `{c.tgt}`" for c in config.data.corpora] or [
        f"- `{src}` → `{tgt}`" for src, tgt in zip(config.data.train_src, config.data.train_tgt, strict=True)
    ]
    languages = sorted({c.tgt_lang for c in config.data.corpora if c.tgt_lang})
    start = f'"<2{languages[0]}> ' if languages else '"'
    tokens = ", ".join(f"`<2{x}>`" for x in languages)
    how = f"Start every source with its target language's token ({tokens}).\n" if languages else ""
    search = "greedy" if config.train.valid_beam == 1 else f"beam {config.train.valid_beam}"
    front = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True)
    return f"""---
{front}---

# {run_dir.name}

A Transformer translation model trained with s2s {__version__} and exported with
`s2s export {run_dir.name} OUT --format huggingface` (checkpoint `{checkpoint.name}`).

## Training data

{chr(10).join(corpora)}

## Quality

{quality_text(records, best, search)}

## Use

```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("PATH")
model = AutoModelForSeq2SeqLM.from_pretrained("PATH")
batch = tokenizer([{start}A sentence to translate."], return_tensors="pt", padding=True)
out = model.generate(**batch, max_new_tokens=100)
print(tokenizer.batch_decode(out, skip_special_tokens=True))
```

{how}The generation config holds the export's decode defaults (beam {config.decode.beam}, length penalty
{config.decode.length_penalty}). `generate` has no limit relative to the source length: s2s decodes
at most {config.decode.max_len_a} x source tokens (with `</s>`) + {config.decode.max_len_b} steps,
`</s>` included; `max_new_tokens` one less gives the same search.
Tested with transformers {TESTED_TRANSFORMERS}.
"""
