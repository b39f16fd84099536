"""Several trained runs decoded side by side: how much faster a small student is than its teacher.

`--sections runs --runs A,B,...` translates `--src` with each run in the ways a user deploys it: s2s's
decoder as `s2s translate` runs it (`--precision auto`), s2s in int8 (`--quantize int8`), and s2s's
CTranslate2 engine on an int8 export (and, with `--shortlist K`, on an int8 export with that lexical
shortlist: `s2s export --shortlist K`). Every setting runs in a fresh process (workers.py, the engines
section's worker), one batch per core (the arrangement the engines grid finds fastest on a CPU), each
run's own `decode.max_tokens`, round-robin `--repeat` times (the fastest counts). Reported: sentences/s,
the ratio to the first run's `s2s auto` (the reference, e.g. the recipe model), parameters, peak RSS
and BLEU against `--ref`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import torch

from benchmarks import engines
from benchmarks.options import Options
from benchmarks.timed import source_lines

SETTINGS = (("s2s", None, "auto"), ("s2s", "int8", "fp32"), ("ctranslate2", "int8", "fp32"))
SHORTLISTED = SETTINGS[-1]  # CTranslate2 int8: what `--shortlist` measures again, on its own export


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Every run and setting on the CPU, at each of `--beams`."""
    from seq2seq.ct2.conversion import export_ctranslate2
    from seq2seq.ct2.shortlist import ShortlistSize
    from seq2seq.run.layout import RunDir

    count = len(source_lines(opts.src, opts.limit))
    refs = source_lines(opts.ref, opts.limit) if opts.ref else None
    cores = torch.get_num_threads()
    best: dict[tuple[str, str, str | None, int, int], dict[str, Any]] = {}
    settings = [(*setting, 0) for setting in SETTINGS]
    if opts.shortlist:
        settings.append((*SHORTLISTED, opts.shortlist))
    with tempfile.TemporaryDirectory() as scratch:
        exports: dict[tuple[str, int], Path] = {}  # each (run, shortlist)'s export
        budgets: dict[str, int] = {}  # each run's decode.max_tokens
        sizes: dict[str, int] = {}  # and its parameters
        for run_dir in opts.runs:
            for shortlist in sorted({setting[-1] for setting in settings}):
                out = exports[run_dir, shortlist] = Path(scratch) / f"ct2_{len(exports)}"
                size = ShortlistSize(shortlist) if shortlist else None
                export_ctranslate2(Path(run_dir), "best", out, "int8", shortlist=size)
            budgets[run_dir] = RunDir(run_dir).load_config().decode.max_tokens
            sizes[run_dir] = parameters(run_dir)
        for _ in range(opts.repeat):  # round-robin, so a noisy minute does not hit one run only
            for run_dir in opts.runs:
                base = {
                    "run_dir": run_dir,
                    "src": opts.src,
                    "limit": opts.limit,
                    "at_once": cores,
                    "each": 1,
                    "max_tokens": budgets[run_dir],
                }
                for beam in opts.beams:
                    for engine, quantize, precision, shortlist in settings:
                        made = {quantize: exports[run_dir, shortlist]}
                        setting = (engine, quantize, precision, beam)
                        row = engines.measure_setting(base, setting, made, Path(scratch), refs, count)
                        row["shortlist"] = shortlist
                        key = (run_dir, engine, quantize, beam, shortlist)
                        if key not in best or row["sentences_per_s"] > best[key]["sentences_per_s"]:
                            best[key] = row
    rows = list(best.values())
    for row in rows:
        reference = best[(opts.runs[0], "s2s", None, row["beam"], 0)]
        row["vs_reference"] = row["sentences_per_s"] / reference["sentences_per_s"]
        row["parameters"] = sizes[row["run_dir"]]
    return {"sentences": count, "cores": cores, "reference": opts.runs[0], "results": rows}


def parameters(run_dir: str) -> int:
    """The run's trainable parameters, tied embeddings counted once."""
    from seq2seq.models.encoder_decoder import count_parameters
    from seq2seq.translate.placement import Placement
    from seq2seq.translate.translator import Translator

    model = Translator.load(run_dir, ["best"], Placement("cpu", "fp32")).model
    assert isinstance(model, torch.nn.Module)  # one checkpoint: one model, never an ensemble
    return count_parameters(model)


def report(section: dict[str, Any]) -> str:
    lines = [
        f"== runs: side by side ({section['sentences']} sentences, {section['cores']} cores, one batch "
        f"per core); ratio to {section['reference']} (s2s auto)",
        f"{'run':<28}{'engine':<13}{'weights':<11}{'beam':>5}{'sent/s':>9}{'ratio':>8}{'params':>12}"
        f"{'peak RSS MiB':>13}{'BLEU':>7}",
    ]
    for row in section["results"]:
        lines.append(
            f"{Path(row['run_dir']).name:<28}{engine_name(row):<13}{engines.weights(row):<11}{row['beam']:>5}"
            f"{row['sentences_per_s']:>9}{row['vs_reference']:>7.2f}x{row['parameters']:>12,}"
            f"{row['peak_rss_mib']:>13.0f}{row.get('bleu', ''):>7}"
        )
    return "\n".join(lines)


def engine_name(row: dict[str, Any]) -> str:
    """The engine, and the shortlist its export has (`ct2+sl20`)."""
    if not row.get("shortlist"):
        return row["engine"]
    return f"ct2+sl{row['shortlist']}"
