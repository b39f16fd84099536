"""The final table of a pipeline: every model on every test set, and what each step cost.

A row per model and test set, read from the evaluation's `s2s evaluate --json` records: BLEU and chrF
(their sacreBLEU signatures once, below the table), the sentences per second of that translation
(every model timed in the one evaluation step, one after the other), the checkpoint, beam and length
penalty chosen on val (and each run that reranks its beam, with its weight, if chosen) with the val BLEU
they had, and the model's parameters (an ensemble's: all its members'). Then each step's time and the
disk its folder holds, from the step records. Written as JSON and Markdown into the workspace (only
when it changed) and printed.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from seq2seq.files import write_text
from seq2seq.pipeline.delivery import Scored
from seq2seq.pipeline.plan import Plan
from seq2seq.pipeline.records import read_record
from seq2seq.pipeline.val_choice import Decoder
from seq2seq.translate.options import Rerank

log = logging.getLogger(__name__)
COLUMNS = (
    "model",
    "test",
    "engine",
    "checkpoint, beam, length penalty (val BLEU)",
    "BLEU",
    "chrF",
    "sent/s",
    "parameters",
)


def table(plan: Plan) -> dict[str, Any]:
    """The table as JSON-ready data (`rows`, `signatures`, `steps`)."""
    rows, signatures = [], {}
    for one in plan.scored:
        record = json.loads(one.record.read_text(encoding="utf-8"))
        scores, decode = record["systems"][0]["scores"], record["decode"]
        signatures = {"bleu": scores["bleu"]["signature"], "chrf": scores["chrf"]["signature"]}
        rows.append(
            {
                "model": one.model,
                "test": one.test,
                "engine": _engine(decode),
                "checkpoints": [Path(c).name for c in one.decoder.checkpoints],
                "beam": one.decoder.beam,  # chosen: the table follows the choices
                "length_penalty": one.decoder.length_penalty,
                **_reranking(one.decoder),
                "val_bleu": one.decoder.val_bleu,
                "bleu": round(scores["bleu"]["score"], 2),
                "chrf": round(scores["chrf"]["score"], 2),
                "sentences_per_second": decode["sentences_per_second"],
                "parameters": _parameters(one),
            }
        )
    return {"rows": rows, "signatures": signatures, "steps": steps(plan, [s.name for s in plan.steps])}


def steps(plan: Plan, names: list[str]) -> list[dict[str, Any]]:
    """Each step's time and disk, as its record says (none: it has not run)."""
    found = []
    for name in names:
        record = read_record(plan.workspace.root, name)
        if record is not None:
            found.append({"step": name, "seconds": record.seconds, "disk_bytes": record.disk_bytes})
    return found


def _reranking(decoder: Decoder) -> dict[str, object]:
    """The runs (by folder name) that rerank the model's beam and their weights, as an evaluation's
    record writes them (`Rerank.record`); "" and None where none does."""
    names = tuple(Path(run).name for run in decoder.rerank)
    return Rerank(runs=names, weights=decoder.rerank_weight).record() or {"rerank": "", "rerank_weight": None}


def markdown(data: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---" * len(COLUMNS) + "|"]
    for row in data["rows"]:
        val = f" ({row['val_bleu']:.2f})" if row["val_bleu"] is not None else ""
        judged = Rerank.read(row["rerank"], row["rerank_weight"])
        by = ", ".join(f"{run} {w:g}" for run, w in zip(judged.runs, judged.weights, strict=True))
        reranked = f", reranked by {by}" if by else ""
        chosen = f"{', '.join(row['checkpoints'])}, {row['beam']}, {row['length_penalty']:g}{reranked}{val}"
        lines.append(
            f"| {row['model']} | {row['test']} | {row['engine']} | {chosen} | {row['bleu']:.2f} | "
            f"{row['chrf']:.2f} | {row['sentences_per_second']:,.1f} | {row['parameters']:,} |"
        )
    lines += [
        "",
        f"BLEU: `{data['signatures'].get('bleu', '')}`",
        f"chrF: `{data['signatures'].get('chrf', '')}`",
    ]
    return "\n".join(lines) + "\n"


def steps_markdown(found: list[dict[str, Any]]) -> str:
    lines = ["| step | seconds | disk |", "|---|---|---|"]
    lines += [f"| {s['step']} | {s['seconds']:,.1f} | {size(s['disk_bytes'])} |" for s in found]
    return "\n".join(lines) + "\n"


def size(n: int) -> str:
    """Bytes for people: 18.4 MB, 920 kB."""
    return f"{n / 1e6:,.1f} MB" if n >= 1e6 else f"{n / 1e3:,.0f} kB"


def print_summary(plan: Plan, names: list[str]) -> None:
    """Each step's time and disk, and the table when the evaluation has run, on stdout."""
    print(steps_markdown(steps(plan, names)))
    if read_record(plan.workspace.root, "evaluate") is not None and "evaluate" in names:
        print(markdown(table(plan)), end="")


def write_table(plan: Plan) -> None:
    """table.json and table.md in the workspace, rewritten only when they changed."""
    data = table(plan)
    json_file, md_file = plan.workspace.table_files
    for path, text in (
        (json_file, json.dumps(data, indent=1) + "\n"),
        (md_file, markdown(data) + "\n" + steps_markdown(data["steps"])),
    ):
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_text(path, text)
    log.info("the table: %s, %s", json_file, md_file)


def _engine(decode: dict[str, Any]) -> str:
    """`s2s (bfloat16)`, `ctranslate2 (int8, shortlist)`: what translated, and how."""
    how = decode.get("quantize") or decode.get("precision") or ""
    shortlist = ", shortlist" if decode.get("shortlist") else ""
    return f"{decode.get('engine', '')} ({how}{shortlist})"


def _parameters(one: Scored) -> int:
    """The model's parameters (of each member of an ensemble): its checkpoint's tensors, a tensor that
    several names share (tied embeddings) counted once."""
    from seq2seq.checkpoint import inference_weights, load_checkpoint  # here: a pipeline runs without torch

    total = 0
    for path in one.decoder.checkpoints:
        weights = inference_weights(load_checkpoint(Path(path)), Path(path))
        total += sum({t.untyped_storage().data_ptr(): t.numel() for t in weights.values()}.values())
    return total
