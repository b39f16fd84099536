"""Do the two engines find the same translations? BLEU and agreement of s2s's engines on one test set.

For each beam (greedy included) and each patience (`decode.patience`), three `s2s translate`
commands, each a whole process timed alone: the default engine (`--engine auto`: the export cache's
choice, int8 and a shortlist where they keep their margins), CTranslate2 over a plain float32 export
of the same checkpoint (`s2s export`, then `--engine ctranslate2`) and s2s's own decoder in float32
(`--engine s2s --precision fp32`, the reference). It prints a Markdown table: BLEU with its
sacreBLEU signature, seconds, and the share of lines where each engine's translation is the
reference's.

    python -m experiments.search_rule.search_rule RUN --src SRC --ref REF [--beams 4,5,1] [--patience 1,2]

The export cache is pointed at a fresh folder for the run, so that its first use (the export and its
choices, which `--engine auto` makes) is part of the first default row, as a new user meets it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import sacrebleu

ENGINES = {  # name: (what is translated with: the run, or its float32 export; flags)
    "default": ("run", ["--engine", "auto"]),
    "ctranslate2 fp32": ("export", ["--engine", "ctranslate2"]),
    "s2s fp32": ("run", ["--engine", "s2s", "--precision", "fp32"]),
}


def translate(run: str, src: str, out: Path, flags: list[str], env: dict[str, str]) -> float:
    """Seconds `s2s translate` takes, start to exit."""
    start = time.monotonic()
    command = ["s2s", "translate", run, "-i", src, "-o", str(out), "--restart", *flags]
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--src", required=True)
    parser.add_argument("--ref", required=True)
    parser.add_argument("--beams", default="4,5,1", help="comma-separated beams (1: greedy)")
    parser.add_argument("--patience", default="2", help="comma-separated patience values")
    parser.add_argument("--json", help="write the rows here too")
    args = parser.parse_args()
    refs = [Path(args.ref).read_text(encoding="utf-8").splitlines()]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "S2S_CACHE_DIR": str(Path(scratch) / "cache")}
        paths = {"run": args.run, "export": str(Path(scratch) / "export")}
        subprocess.run(
            ["s2s", "export", args.run, paths["export"]], check=True, env=env, stdout=subprocess.DEVNULL
        )
        for beam in [int(b) for b in args.beams.split(",")]:
            for patience in [float(p) for p in args.patience.split(",")] if beam > 1 else [1.0]:
                found = {}
                for name, (path, flags) in ENGINES.items():
                    out = Path(scratch) / f"{name}.hyp".replace(" ", "_")
                    asked = [*flags, "--beam", str(beam), "--patience", str(patience)]
                    seconds = translate(paths[path], args.src, out, asked, env)
                    found[name] = out.read_text(encoding="utf-8").splitlines()
                    metric = sacrebleu.BLEU()
                    bleu = metric.corpus_score(found[name], refs)
                    rows.append(
                        {
                            "beam": beam,
                            "patience": patience,
                            "engine": name,
                            "bleu": round(bleu.score, 2),
                            "seconds": round(seconds, 2),
                            "signature": str(metric.get_signature()),
                        }
                    )
                for row in rows[-len(ENGINES) :]:
                    same = sum(a == b for a, b in zip(found[row["engine"]], found["s2s fp32"], strict=True))
                    row["same_as_s2s"] = round(same / len(found["s2s fp32"]), 4)
    print(f"{cpu_name()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}; {args.run} on {args.src}\n")
    print("| beam | patience | engine | BLEU | same as s2s fp32 | seconds |\n|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['beam']} | {r['patience']:g} | {r['engine']} | {r['bleu']:.2f} | "
            f"{100 * r['same_as_s2s']:.1f} % | {r['seconds']:.2f} |"
        )
    print(f"\nBLEU signature: {rows[0]['signature']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
