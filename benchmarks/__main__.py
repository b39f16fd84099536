"""`python -m benchmarks`: every requested section, one after the other, then the targets they are held to.

Each section reports a table on stdout and its numbers into `--json`. A section whose peer is not
installed (CTranslate2, fairseq, the serve extra) is skipped with a note; a section that fails
reports an error line, the others still run, and the command exits 1 at the end.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from benchmarks import data, decode, engines, fairseq, hf, machine, runs, serve, startup, train
from benchmarks.options import Options, UsageError, parse
from seq2seq.device import resolve_device
from seq2seq.errors import Seq2SeqError

log = logging.getLogger("benchmarks")

Result = dict[str, Any]


def _nothing_missing(opts: Options) -> str | None:
    return None


def _no_targets(section: Result) -> dict[str, float]:
    return {}


@dataclass(frozen=True)
class Section:
    """What the command calls of one section."""

    run: Callable[[Options, torch.device], Result]
    report: Callable[[Result], str]
    missing: Callable[[Options], str | None] = _nothing_missing  # why it cannot run here, or None
    targets: Callable[[Result], dict[str, float]] = _no_targets


SECTIONS = {
    "train": Section(train.run, train.report),
    "decode": Section(decode.run, decode.report),
    "engines": Section(engines.run, engines.report, engines.missing, engines.targets),
    "fairseq": Section(fairseq.run, fairseq.report, fairseq.missing, fairseq.targets),
    "data": Section(data.run, data.report),
    "serve": Section(serve.run, serve.report, serve.missing, serve.targets),
    "runs": Section(runs.run, runs.report, engines.missing),
    "hf": Section(hf.run, hf.report, hf.missing),
    "startup": Section(startup.run, startup.report),
}


def run_sections(opts: Options, device: torch.device) -> Result:
    """Every requested section; prints each report and returns all results as plain data."""
    out: Result = {"skipped": [], "failed": {}, "targets": {}}
    for name in opts.sections:
        section = SECTIONS[name]
        note = section.missing(opts)
        if note is not None:
            out["skipped"].append(f"{name}: {note}")
            print(f"== {name}: skipped, {note}", flush=True)
            continue
        try:
            result = section.run(opts, device)
        except Exception as e:  # one broken section must not take the others' numbers with it
            log.exception("section %s failed", name)
            out["failed"][name] = f"{type(e).__name__}: {e}"
            print(f"== {name}: error: {type(e).__name__}: {e}", flush=True)
            continue
        out[name] = result
        out["targets"] |= section.targets(result)
        print(section.report(result), flush=True)
    return out


def targets_report(values: dict[str, float], skipped: list[str], failed: dict[str, str]) -> str:
    lines = ["== targets"]
    lines += [f"{name:<52}{value:>8.2f}{'' if 'BLEU' in name else 'x'}" for name, value in values.items()]
    lines += [f"skipped {note}" for note in skipped]
    lines += [f"failed {name}: {error.splitlines()[0]}" for name, error in failed.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """0 when every section ran or was skipped, 1 when one failed, 2 for a usage mistake."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        opts = parse(argv)
        if opts.threads:
            torch.set_num_threads(opts.threads)
        device = resolve_device(opts.device)
    except (UsageError, Seq2SeqError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    described = machine.describe(device)
    print(machine.one_line(described), flush=True)
    report = {"machine": described, "options": json.loads(json.dumps(dataclasses.asdict(opts), default=str))}
    report |= run_sections(opts, device)
    print(targets_report(report["targets"], report["skipped"], report["failed"]))
    if opts.json:
        opts.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
