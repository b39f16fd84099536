"""The noisy-corpus experiment of docs/corpora.md: does cleaning a crawled corpus pay, and which filter?

Multi30k's training set is split in two halves: 14,500 clean pairs, and a "crawl" of the other 14,500
into which noise is planted (seeded): 10% of the targets shuffled among themselves (misaligned), 10%
targets replaced by their source (untranslated copies), 5% targets replaced by the same line of
train.fr (the wrong language), and 10% more pairs appended as duplicates of crawl pairs; written as
one gzip TSV with a label per line. Then, each step skipped when its result exists (so a rerun
resumes), each training alone for the same time budget:

    clean     the de->en recipe on the clean half only (also the forward model of the dual filter)
    reverse   en->de on the clean half (the reverse model of the dual filter)
    raw       clean + the crawl as it is
    rules     clean + the crawl through `s2s prepare`'s rules (copies, langid, dedup, control chars)
    dual      clean + the crawl through the rules, then `s2s score`'s dual cross-entropy

The dual filter's threshold is chosen on val, never on test: the 90th percentile of the dual
cross-entropy of the val pairs (clean pairs neither model trained on). Every system is evaluated
on val and test_2016_flickr with the recipe's decode settings (beam 5); each filter's precision
and recall against the planted noise, and `s2s score`'s throughput against `s2s translate --beam 1`
on the crawl's lines, are measured too. Results: WORK/results.json and WORK/results.md.

    python -m experiments.noisy_corpus.noisy_corpus --work runs/noisy --data data/multi30k --minutes 15
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_outputs

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "configs" / "multi30k_de_en.yaml"
NOISE = {"misaligned": 0.10, "copy": 0.10, "french": 0.05}
DUPLICATES = 0.10
RULES = {"copies": True, "langid": True, "dedup": True, "control_chars": True}
VAL_QUANTILE = 0.9


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    work = Path(args.work).resolve()
    data = Path(args.data).resolve()
    try:  # the corpora, runs and results go to --work: never into Multi30k, nor around it
        check_outputs({}, {"--data": data}, {"--work": work})
    except Seq2SeqError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    work.mkdir(parents=True, exist_ok=True)
    make_corpora(data, work)
    results: dict = {"date": datetime.date.today().isoformat(), "machine": machine(), "systems": {}}
    train(work, "clean", corpora(work, "clean"), data, args.minutes, "de", "en")
    train(work, "reverse", corpora(work, "clean"), data, args.minutes, "en", "de")
    dual_filter(work, data)
    for name in ("raw", "rules", "dual"):
        train(work, name, corpora(work, name), data, args.minutes, "de", "en")
    for name in ("clean", "raw", "rules", "dual"):
        results["systems"][name] = evaluate(work, name, data)
    results["filters"] = filter_quality(work)
    results["throughput"] = throughput(work)
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (work / "results.md").write_text(markdown(results))
    print(markdown(results))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", required=True, help="Directory for the corpora, runs and results.")
    parser.add_argument(
        "--data", default="data/multi30k", help="Multi30k with train.{de,en,fr}, val, test_2016_flickr."
    )
    parser.add_argument("--minutes", type=float, default=15, help="Training budget of each model.")
    return parser.parse_args(argv)


def s2s(*args: str) -> subprocess.CompletedProcess[str]:
    """`s2s ARGS` as a process (the machine to itself), failing loudly."""
    result = subprocess.run(
        [sys.executable, "-m", "seq2seq", *args], capture_output=True, text=True, cwd=ROOT
    )
    if result.returncode:
        sys.exit(f"s2s {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return result


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


# ---- the corpora ----------------------------------------------------------------------------------


def make_corpora(data: Path, work: Path) -> None:
    """work/clean.{de,en}, work/crawl.tsv.gz and work/crawl.labels (one label per crawl line)."""
    if (work / "crawl.labels").is_file():
        return
    de, en = lines(data / "train.de"), lines(data / "train.en")
    french = data / "train.fr"
    if not french.is_file():
        sys.exit(f"{french} is missing: fetch it with scripts/fetch_multi30k.sh --langs de,en,fr")
    fr = lines(french)
    half = len(de) // 2
    (work / "clean.de").write_text("\n".join(de[:half]) + "\n", encoding="utf-8")
    (work / "clean.en").write_text("\n".join(en[:half]) + "\n", encoding="utf-8")
    rng = random.Random(0)
    crawl = list(range(half, len(de)))
    order = crawl[:]
    rng.shuffle(order)
    labels = dict.fromkeys(crawl, "clean")
    start = 0
    for kind, share in NOISE.items():
        chosen = order[start : start + round(share * len(crawl))]
        start += len(chosen)
        labels.update(dict.fromkeys(chosen, kind))
    targets = {i: en[i] for i in crawl}
    misaligned = [i for i in crawl if labels[i] == "misaligned"]
    shuffled = misaligned[1:] + misaligned[:1]  # a rotation: no target stays in place
    for i, j in zip(misaligned, shuffled, strict=True):
        targets[i] = en[j]
    for i in crawl:
        if labels[i] == "copy":
            targets[i] = de[i]
        elif labels[i] == "french":
            targets[i] = fr[i]
    rows = [(de[i], targets[i], labels[i]) for i in crawl]
    repeats = rng.sample(range(len(rows)), round(DUPLICATES * len(rows)))
    rows += [(rows[k][0], rows[k][1], "duplicate") for k in repeats]
    with gzip.open(work / "crawl.tsv.gz", "wt", encoding="utf-8") as f:
        f.writelines(f"{s}\t{t}\n" for s, t, _ in rows)
    (work / "crawl.labels").write_text("\n".join(label for *_, label in rows) + "\n")


def corpora(work: Path, system: str) -> list[dict]:
    """data.corpora of each system."""
    clean = {"name": "clean", "src": str(work / "clean.de"), "tgt": str(work / "clean.en")}
    if system == "clean":
        return [clean]
    if system == "raw":
        return [clean, {"name": "crawl", "tsv": str(work / "crawl.tsv.gz")}]
    if system == "rules":
        return [clean, {"name": "crawl", "tsv": str(work / "crawl.tsv.gz"), "clean": RULES}]
    return [clean, {"name": "crawl", "tsv": str(work / "crawl_dual.tsv.gz"), "clean": RULES}]


def train(
    work: Path, name: str, corpora_: list[dict], data: Path, minutes: float, src: str, tgt: str
) -> None:
    """Train one system on the recipe's settings, `minutes` long (skipped once it has finished)."""
    run = work / name
    if (run / "finished").is_file():
        return
    cfg = yaml.safe_load(RECIPE.read_text())
    if src == "en":  # the reverse direction: the same corpora, sides swapped
        corpora_ = [{**c, "src": c["tgt"], "tgt": c["src"]} for c in corpora_]
    cfg["run_dir"] = str(run)
    cfg["data"] = {
        "corpora": corpora_,
        "valid_src": str(data / f"val.{src}"),
        "valid_tgt": str(data / f"val.{tgt}"),
        "src_lang": src,
        "tgt_lang": tgt,
        "max_len": cfg["data"]["max_len"],
        "max_len_ratio": cfg["data"]["max_len_ratio"],
    }
    cfg["train"]["max_minutes"] = minutes
    config = work / f"{name}.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    print(f"training {name} ({minutes:g} minutes)", flush=True)
    s2s("train", str(config))
    (run / "finished").write_text("")


# ---- the dual cross-entropy filter ----------------------------------------------------------------


def dual_filter(work: Path, data: Path) -> None:
    """work/crawl_dual.tsv.gz: the crawl pairs whose dual cross-entropy is under val's 90th percentile."""
    if (work / "crawl_dual.tsv.gz").is_file():
        return
    rows = [
        line.split("\t")
        for line in gzip.decompress((work / "crawl.tsv.gz").read_bytes()).decode().splitlines()
    ]
    (work / "crawl.de").write_text("".join(s + "\n" for s, _ in rows), encoding="utf-8")
    (work / "crawl.en").write_text("".join(t + "\n" for _, t in rows), encoding="utf-8")
    val = dual_scores(work, data / "val.de", data / "val.en", work / "val.dual")
    crawl = dual_scores(work, work / "crawl.de", work / "crawl.en", work / "crawl.dual")
    threshold = float(np.quantile(val, VAL_QUANTILE))
    (work / "dual_threshold.txt").write_text(f"{threshold:.4f}\n")
    with gzip.open(work / ".crawl_dual.tsv.gz", "wt", encoding="utf-8") as f:
        f.writelines(f"{s}\t{t}\n" for (s, t), score in zip(rows, crawl, strict=True) if score <= threshold)
    os.replace(work / ".crawl_dual.tsv.gz", work / "crawl_dual.tsv.gz")


def score_args(work: Path, src: Path, tgt: Path, out: Path) -> list[str]:
    """`s2s score` of SRC/TGT with the clean (forward) run into OUT."""
    return ["score", str(work / "clean"), "--src", str(src), "--tgt", str(tgt), "-o", str(out)]


def dual_scores(work: Path, src: Path, tgt: Path, out: Path) -> np.ndarray:
    if not out.is_file():
        s2s(*score_args(work, src, tgt, out), "--reverse", str(work / "reverse"))
    return np.array([float(line.split("\t")[0]) for line in lines(out)])


# ---- measurements ---------------------------------------------------------------------------------


def evaluate(work: Path, name: str, data: Path) -> dict:
    """val and test_2016_flickr BLEU of a system (beam 5, the recipe's decode settings)."""
    scores = {}
    for split in ("val", "test_2016_flickr"):
        out = work / name / f"{split}.json"
        if not out.is_file():
            s2s(
                "evaluate",
                str(work / name),
                "--src",
                str(data / f"{split}.de"),
                "--ref",
                str(data / f"{split}.en"),
                "--json",
                str(out),
            )
        system = json.loads(out.read_text())["systems"][0]
        scores[split] = system["scores"]["bleu"]["score"]
        scores["signature"] = system["scores"]["bleu"]["signature"]
    manifest = work / name / "prepared"
    scores["pairs"] = sum(json.loads(p.read_text())["pairs"] for p in manifest.glob("*/manifest.json"))
    return scores


def filter_quality(work: Path) -> dict:
    """Per filter, what it dropped of the crawl against what was planted: precision (the share of
    what it dropped that was planted noise of any kind) and recall (the share of the noise it aims
    at, or of all the noise, that it dropped).

    The rules' decisions are `s2s prepare`'s own, line by line (`prepared/crawl/reasons.u8`).
    """
    from seq2seq.data.cleaning import CODE

    kinds = np.array(lines(work / "crawl.labels"))
    codes = np.fromfile(work / "rules" / "prepared" / "crawl" / "reasons.u8", np.uint8)
    assert len(codes) == len(kinds)
    noise = kinds != "clean"
    dual = np.loadtxt(work / "crawl.dual", usecols=0) > float((work / "dual_threshold.txt").read_text())
    rules = np.isin(
        codes, [CODE[r] for r in ("copy", "control_chars", "few_alnum", "wrong_language", "duplicate")]
    )
    filters = {
        "copy rule": (codes == CODE["copy"], "copy"),
        "langid rule": (codes == CODE["wrong_language"], "french"),
        "dedup rule": (codes == CODE["duplicate"], "duplicate"),
        "all rules": (rules, None),
        "length rules (always on)": (np.isin(codes, [CODE["too_long"], CODE["bad_ratio"]]), None),
        "dual cross-entropy": (dual, None),
        "rules + dual": (rules | dual, None),
    }
    out = {}
    for name, (dropped, aim) in filters.items():
        target = kinds == aim if aim else noise
        out[name] = {
            "dropped": int(dropped.sum()),
            "planted": int(target.sum()),
            "precision": float((dropped & noise).sum() / max(dropped.sum(), 1)),  # any planted noise
            "recall": float((dropped & target).sum() / max(target.sum(), 1)),
            "by_label": {k: int((dropped & (kinds == k)).sum()) for k in ("clean", *NOISE, "duplicate")},
        }
    return out


def throughput(work: Path) -> dict:
    """Pairs per second of `s2s score` (forward) and lines per second of `s2s translate --beam 1`."""
    src, tgt = work / "crawl.de", work / "crawl.en"
    count = len(lines(src))
    timings = {}
    for name, args in (
        ("score", score_args(work, src, tgt, work / "timing.score")),
        (
            "translate_beam1",
            ["translate", str(work / "clean"), "--beam", "1", "-i", str(src), "-o", str(work / "timing.hyp")],
        ),
    ):
        start = time.perf_counter()
        s2s(*args)
        timings[name] = count / (time.perf_counter() - start)
    return {"lines": count, **timings, "ratio": timings["score"] / timings["translate_beam1"]}


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    cores = len(os.sched_getaffinity(0))
    return f"{cores} cores of {cpu}, {platform.system()}, Python {platform.python_version()}"


def markdown(results: dict) -> str:
    rows = [
        f"Measured {results['date']} on {results['machine']}.",
        "",
        "| system | training pairs kept | val BLEU | test_2016 BLEU |",
        "|---|---|---|---|",
    ]
    for name, s in results["systems"].items():
        rows.append(f"| {name} | {s['pairs']:,} | {s['val']:.2f} | {s['test_2016_flickr']:.2f} |")
    rows += ["", f"BLEU signature: `{next(iter(results['systems'].values()))['signature']}`", ""]
    rows += [
        "| filter | dropped | aimed at (planted) | precision | recall | dropped by planted label |",
        "|---|---|---|---|---|---|",
    ]
    for name, f in results["filters"].items():
        labels = ", ".join(f"{k} {v}" for k, v in f["by_label"].items())
        scores = f"{f['precision']:.3f} | {f['recall']:.3f}"
        rows.append(f"| {name} | {f['dropped']:,} | {f['planted']:,} | {scores} | {labels} |")
    t = results["throughput"]
    rows += [
        "",
        f"`s2s score` {t['score']:.0f} pairs/s, `s2s translate --beam 1` {t['translate_beam1']:.0f} lines/s "
        f"on the crawl's {t['lines']:,} lines: {t['ratio']:.2f}x.",
    ]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    main()
