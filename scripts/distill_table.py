"""The back-translation and distillation table (docs/distillation.md), from what
scripts/multi30k_bt_distill.sh wrote into RUNS: each run's val choice and test score
(multi30k_eval.sh), the int8 evaluations, and the side-by-side speed of `scripts.bench --sections runs`.

    python -m scripts.distill_table runs/bt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from scripts.select_on_val import bleu, recorded

DISTILLED = {  # each distilled student's run: its row, and its int8 rows' label (the first made is in int8)
    "student_distilled": ("student distilled from the teacher", "student distilled"),
    "student_distilled_sources": (
        "student distilled, training sources only",
        "student distilled (sources only)",
    ),
}


def chosen(run: Path) -> tuple[Path, Path, str]:
    """The val record of the settings multi30k_eval.sh chose, the test record, and the choice."""
    folder = run / "eval"
    choice = recorded(folder)
    return (
        folder / choice["val_record"],
        folder / "test.json",
        f"{choice['checkpoint']}, lp {choice['length_penalty']}",
    )


def started(run: Path) -> str:
    """How a student began, for its label: ", started from the teacher" when it was shrunk from it
    (STUDENT_INIT=teacher: its config names train.init_from), else nothing."""
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    return ", started from the teacher" if config["train"].get("init_from") else ""


def main(runs: Path) -> None:
    speed = {  # (run, engine, weights, shortlist): the bench's row
        (Path(r["run_dir"]).name, r["engine"], r["quantize"], r.get("shortlist", 0)): r
        for r in json.loads((runs / "speed.json").read_text(encoding="utf-8"))["runs"]["results"]
        if r["beam"] == 5
    }
    teacher = Path((runs / "teacher.txt").read_text(encoding="utf-8").split()[1]).name
    rows = [("de→en recipe", "de_en")]  # each timed as `s2s translate` runs it (s2s, not quantized)
    if (runs / "de_en_bt" / "eval").is_dir():  # not with BT=0
        rows.append(("+ tagged back-translation of the English captions", "de_en_bt"))
    rows += [
        (f"teacher ({teacher}, the better on val)", teacher),
        ("student trained on the parallel data alone" + started(runs / "student"), "student"),
    ]
    made = [name for name in DISTILLED if (runs / name / "eval").is_dir()]  # VARIANTS=1: both
    rows += [(DISTILLED[name][0] + started(runs / name), name) for name in made]
    distilled = made[0]  # the one the int8 rows measure (DISTILL=sources makes only the variant)
    columns = ["system", "val BLEU", "test_2016 BLEU", "beam-5 sent/s (CPU)", "vs recipe", "parameters"]
    print("| " + " | ".join([*columns, "chosen on val"]) + " |")
    print("|---" * (len(columns) + 1) + "|")
    signature = ""
    for label, name in rows:
        val, test, choice = chosen(runs / name)
        (val_bleu, _), (test_bleu, signature) = bleu(val), bleu(test)
        s = speed.get((name, "s2s", None, 0))
        timed = (
            f"{s['sentences_per_s']:.0f} (s2s, {'bf16' if s['dtype'] == 'bfloat16' else 'fp32'}) | "
            f"{s['vs_reference']:.2f}x | {s['parameters']:,}"
            if s
            else "not in speed.json | | "  # a run trained after the speed was measured
        )
        print(f"| {label} | {val_bleu:.2f} | {test_bleu:.2f} | {timed} | {choice} |")
    student = runs / distilled / "eval"
    int8 = {  # (engine, shortlist): the val and test records
        ("s2s", 0): (student / "int8_val.json", student / "int8_test_2016_flickr.json"),
        ("ctranslate2", 0): (runs / "ct2_int8_val.json", runs / "ct2_int8_test_2016_flickr.json"),
    }
    for val in sorted(runs.glob("ct2_int8_sl*_val.json")):  # SHORTLIST=K
        k = int(val.name.removeprefix("ct2_int8_sl").removesuffix("_val.json"))
        int8["ctranslate2", k] = (val, runs / f"ct2_int8_sl{k}_test_2016_flickr.json")
    for (engine, k), (val, test) in int8.items():
        s = speed[(distilled, engine, "int8", k)]
        label = f"{engine}, `--shortlist {k}`" if k else engine
        print(
            f"| {DISTILLED[distilled][1]}, int8, {label} | {bleu(val)[0]:.2f} | {bleu(test)[0]:.2f} | "
            f"{s['sentences_per_s']:.0f} | {s['vs_reference']:.2f}x | {s['parameters']:,} | as above |"
        )
    print(f"\nBLEU signature: {signature}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
