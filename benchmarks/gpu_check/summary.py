"""The results of the GPU check: `summary.md` (to paste into the README) and `steps.json`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.gpu_check.check import Check, StepResult
from benchmarks.gpu_check.machine import OPTIONAL
from benchmarks.gpu_check.steps import BENCH_TRAIN, DRY_MAX_TOKENS, RECIPE_MAX_TOKENS, TORCHRUN, TRAIN_RUN


def rate(flop_per_s: float) -> str:
    return f"{flop_per_s / 1e12:.1f} TFLOP/s" if flop_per_s >= 1e11 else f"{flop_per_s / 1e9:.2f} GFLOP/s"


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [[str(c).replace("|", "\\|") for c in row] for row in rows]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(r) + " |" for r in cells),
    ]


def gpu_line(check: Check, m: dict[str, Any]) -> str:
    if not m.get("gpu"):
        return "none: dry run on the CPU, no CUDA call" if check.dry_run else "none seen"
    return (
        f"{m['gpu']} x {m['gpus']}, {m['gpu_memory_gib']} GiB, compute capability {m['capability']}, "
        f"driver {m['driver'] or 'unknown'}, bf16 {'yes' if m['bf16_supported'] else 'no'}"
    )


def machine_rows(check: Check, results: dict[str, StepResult]) -> list[str]:
    """GPU, versions, date, what is not installed, and how the check went."""
    m = results["machine"].numbers if "machine" in results else {}
    software = (
        f"torch {m.get('torch')}, CUDA {m.get('cuda') or '- (a CPU build)'}, cuDNN {m.get('cudnn', '-')}, "
        f"Python {m.get('python')}"
    )
    missing = ", ".join(f"{name} ({OPTIONAL[name]}: not checked)" for name in m.get("missing", [])) or "-"
    statuses = [r.status for r in results.values()]
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
    spent = sum(r.seconds for r in results.values())
    rows = [
        ["GPU", gpu_line(check, m)],
        ["software", software],
        ["CPU", f"{m.get('cpu')}, {m.get('cores')} cores"],
    ]
    rows += [["date", m.get("date", "-")], ["not installed", missing]]
    rows.append(["check", f"{spent:.0f} s of its {check.budget_s:g} s budget; steps: {counts}"])
    return table(["", ""], rows)


def steps_rows(results: dict[str, StepResult]) -> list[str]:
    rows = [[r.name, r.status, f"{r.seconds:g}", f"{r.budget_s:g}", r.note] for r in results.values()]
    return table(["step", "status", "seconds", "budget", "note"], rows)


def tests_section(check: Check, r: StepResult) -> list[str]:
    n = r.numbers
    counts = f"**{len(n['passed'])} passed, {len(n['failed'])} failed, {len(n['skipped'])} skipped**"
    lines = [f"{counts} (`python3 -m pytest -q -m cuda {check.tests}`, {r.seconds:g} s)"]
    for outcome in ("failed", "skipped"):
        lines += ["", f"{outcome.capitalize()}:", *(f"- {name}" for name in n[outcome])] if n[outcome] else []
    return lines


def bench_train_section(check: Check, r: StepResult) -> list[str]:
    """The matmul peaks, then each model and implementation: tokens/s, model FLOP/s and MFU."""
    if "train" not in r.numbers:
        return [f"not measured: {r.numbers.get('failed', {}).get('train', r.note)}"]
    t = r.numbers["train"]
    peaks = ", ".join(f"{dtype} {rate(x)}" for dtype, x in t["matmul_flop_per_s"].items())
    header = ["model", "impl", "precision", "params", "tgt tok/s", "model FLOP/s", "MFU"]
    rows = [
        [
            x["model"],
            x["impl"],
            x["dtype"],
            f"{x['params'] / 1e6:.1f}M",
            f"{x['tgt_tokens_per_s']:,.0f}",
            rate(x["flop_per_s"]),
            f"{100 * x['utilization']:.1f}%",
        ]
        for x in t["results"]
    ]
    ratios = ", ".join(f"{k} {v:.2f}x" for k, v in t["s2s_over_reference_tgt_tokens_per_s"].items())
    warmup, steps, size = (check.size(*v) for v in BENCH_TRAIN.values())
    tokens = f"{DRY_MAX_TOKENS} (dry run)" if check.dry_run else f"{RECIPE_MAX_TOKENS} (the recipe's)"
    return [
        f"Matmul peak measured in the same run ({size}x{size}): {peaks}.",
        "",
        *table(header, rows),
        "",
        f"{steps} timed steps after {warmup} of warm-up, batches of `train.max_tokens` {tokens}; MFU = "
        "the model's FLOP/s (formula in bench_train.json) / the matmul peak of its precision. "
        f"s2s / nn.Transformer: {ratios}.",
    ]


def run_section(check: Check, r: StepResult, sizes: dict[str, tuple[Any, Any]], who: str) -> list[str]:
    """A training run: steps, seconds, target tokens/s, its last validation (and the log line)."""
    n = r.numbers
    steps, _, tokens, minutes = (check.size(*v) for v in sizes.values())
    head = f"{who}, {check.precision}, `train.max_tokens` {tokens}, up to {steps} steps or {minutes} min: "
    if "tgt_tokens_per_s" not in n:
        return [head + f"not measured ({r.status}, {r.note})"]
    return [
        head + f"{n['steps']} steps in {n['train_seconds']:g} s of training, **{n['tgt_tokens_per_s']:,.0f} "
        f"target tok/s** (mean of the log intervals after the first); {r.seconds:g} s with the tokenizer, "
        "the corpus and the validation.",
        "",
        f"Final validation (greedy, val): loss {n.get('valid_loss')}, BLEU {n.get('valid_bleu')}",
        "",
        f"    {n.get('valid_line', '')}",
    ]


def decode_section(check: Check, r: StepResult) -> list[str]:
    """Beam 5 with and without the decoder cache: sentences/s, tokens/s and the peak memory."""
    if "decode" not in r.numbers:
        return [f"not measured: {r.numbers.get('failed', {}).get('decode', r.note)}"]
    d = r.numbers["decode"]
    header = ["search", "cache", "sentences", "seconds", "sent/s", "tgt tok/s", "peak MiB"]
    rows = [
        [
            x["search"],
            "yes" if x["use_cache"] else "no",
            x["sentences"],
            x["seconds"],
            x["sentences_per_s"],
            f"{x['tgt_tokens_per_s']:,.0f}",
            f"{x['peak_mib']:,.0f}",
        ]
        for x in d["results"]
    ]
    ratio = ", ".join(f"{k} {v:.2f}x" for k, v in d["cached_over_uncached_sentences_per_s"].items())
    return [
        f"The short run's best checkpoint on {d['sentences']} sentences of {Path(d['src']).name}:",
        "",
        *table(header, rows),
        "",
        f"Cached / uncached sentences/s: {ratio}; peak = {d['results'][0]['memory']}, model included.",
    ]


def engines_section(check: Check, r: StepResult) -> list[str]:
    """s2s's decoder and CTranslate2, each forced, on the same checkpoint and lines, beam 5."""
    e = r.numbers["engines"]
    header = ["engine", "precision", "load s", "sentences", "sent/s", "BLEU"]
    rows = [
        [x["engine"], x["precision"], x["load_s"], x["sentences"], x["sentences_per_s"], x["bleu"]]
        for x in e["results"]
    ]
    return [*table(header, rows), "", f"CTranslate2 / s2s sentences/s on {e['device']}: {e['ct2_over_s2s']}x"]


def train_run_section(check: Check, r: StepResult) -> list[str]:
    return run_section(check, r, TRAIN_RUN, "The Multi30k recipe")


def torchrun_section(check: Check, r: StepResult) -> list[str]:
    who = "2 CPU processes (gloo)" if check.dry_run else "2 processes, one GPU each (NCCL)"
    return run_section(check, r, TORCHRUN, who)


SECTIONS: tuple[tuple[str, str, Callable[[Check, StepResult], list[str]]], ...] = (
    ("cuda_tests", "CUDA tests", tests_section),
    (
        "bench_train",
        "Training throughput and MFU (`python3 -m benchmarks --sections train`)",
        bench_train_section,
    ),
    (
        "bench_fixed",
        "The base model compiled at fixed shapes (`python3 -m benchmarks --sections train "
        "--shape-multiple 16`)",
        bench_train_section,
    ),
    ("train_run", "Short training run", train_run_section),
    ("bench_decode", "Beam-5 decoding (`python3 -m benchmarks --sections decode`)", decode_section),
    ("engines", "Both engines, beam 5 (`python3 -m benchmarks.gpu_check.engines`)", engines_section),
    ("torchrun", "2-GPU torchrun", torchrun_section),
)


def markdown(check: Check, results: dict[str, StepResult]) -> str:
    """The markdown a person pastes into the README; every section says what it measured or why not."""
    dry = " (dry run)" if check.dry_run else ""
    title = "# s2s GPU check" + (": DRY RUN on the CPU, tiny sizes, not GPU numbers" if check.dry_run else "")
    lines = [title, "", *machine_rows(check, results), "", f"## Steps{dry}", "", *steps_rows(results)]
    for name, heading, body in SECTIONS:
        lines += ["", f"## {heading}{dry}", ""]
        r = results.get(name)
        if r is None:
            lines.append("not run yet")
        elif r.status == "skipped":
            lines.append(r.note)
        elif not r.numbers:
            lines.append(f"not measured: {r.status}, {r.note}")
        else:
            lines += body(check, r)
    return "\n".join(lines) + "\n"


def write_results(check: Check, results: dict[str, StepResult]) -> None:
    (check.out / "summary.md").write_text(markdown(check, results), encoding="utf-8")
    steps = [asdict(r) for r in results.values()]
    report = {"dry_run": check.dry_run, "data": str(check.data), "steps": steps}
    (check.out / "steps.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
