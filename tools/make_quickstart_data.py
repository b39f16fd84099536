#!/usr/bin/env python3
"""Generate the quickstart corpus: digits -> English number words ("42007" -> "forty-two thousand seven").

Deterministic (seeded) and disjoint splits, written to data/quickstart/{train,valid,test}.{src,tgt},
and monolingual text of each side for the pipeline example (examples/quickstart_pipeline.yaml):
mono.src (numbers in digits) and mono.tgt (other numbers in words), neither with a translation here.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split()
)
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def below_thousand(n: int) -> str:
    words = []
    if n >= 100:
        words.append(f"{ONES[n // 100]} hundred")
        n %= 100
        if n == 0:
            return " ".join(words)
    if n < 20:
        words.append(ONES[n])
    else:
        words.append(TENS[n // 10] + (f"-{ONES[n % 10]}" if n % 10 else ""))
    return " ".join(words)


def in_words(n: int) -> str:
    """English words for 0 <= n < 1,000,000."""
    if n < 1000:
        return below_thousand(n)
    thousands, rest = divmod(n, 1000)
    head = f"{below_thousand(thousands)} thousand"
    return head if rest == 0 else f"{head} {below_thousand(rest)}"


def sample_numbers(rng: random.Random, count: int) -> list[int]:
    """Numbers with a spread of magnitudes (not just six-digit ones)."""
    return [rng.randrange(10 ** rng.randint(1, 6)) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("data/quickstart"))
    parser.add_argument("--train", type=int, default=30000)
    parser.add_argument("--valid", type=int, default=500)
    parser.add_argument("--test", type=int, default=500)
    parser.add_argument("--mono", type=int, default=1000, help="lines of monolingual text of each side")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    held_out = set()
    splits = {}
    for name, count in (("valid", args.valid), ("test", args.test)):
        numbers: list[int] = []
        while len(numbers) < count:
            n = sample_numbers(rng, 1)[0]
            if n not in held_out:
                held_out.add(n)
                numbers.append(n)
        splits[name] = numbers
    splits["train"] = [n for n in sample_numbers(rng, args.train * 2) if n not in held_out][: args.train]
    args.out.mkdir(parents=True, exist_ok=True)
    for name, numbers in splits.items():
        (args.out / f"{name}.src").write_text("".join(f"{n}\n" for n in numbers), encoding="utf-8")
        (args.out / f"{name}.tgt").write_text("".join(in_words(n) + "\n" for n in numbers), encoding="utf-8")
    mono = [n for n in sample_numbers(rng, args.mono * 4) if n not in held_out][: 2 * args.mono]
    (args.out / "mono.src").write_text("".join(f"{n}\n" for n in mono[::2]), encoding="utf-8")
    (args.out / "mono.tgt").write_text("".join(in_words(n) + "\n" for n in mono[1::2]), encoding="utf-8")
    print(
        f"wrote {', '.join(f'{k}: {len(v)}' for k, v in splits.items())} pairs to {args.out}, and mono.src,"
    )
    print(f"mono.tgt: {args.mono} lines of each side without a translation")


if __name__ == "__main__":
    main()
