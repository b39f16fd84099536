"""`s2s filter`'s work: keep the lines of a text, or the pairs of a parallel text, that pass every rule
asked, in their order, into new files.

The rules, in the order they drop a line (a pair): a blank side; `exclude`, a source line that is a
line of another file (monolingual text already in the training data); `unique`, a repeat of a line
(pair) seen before; `scores` with `keep`, the pairs outside the best `keep` share of what `s2s score`
wrote for them (`ScoreKind`); then `lines` stops after that many are kept. Several source files are
read one after the other (their target files likewise). The outputs are written whole or not at all,
and a refused filter leaves no folder it made.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from seq2seq.data.textio import iter_line_chunks, read_lines
from seq2seq.errors import DataError, Seq2SeqError
from seq2seq.files import atomic_output, check_outputs
from seq2seq.flags import REQUIRED, group, option

# What `s2s score` writes in every field of a pair it gives no score (`seq2seq.translate.lines.BLANK`,
# `seq2seq.translate.scoring.SHORT`; spelled here so that filtering text never imports torch)
NO_SCORE = frozenset({"blank", "short"})


@dataclass(frozen=True)
class FilterRules:
    """What `s2s filter` drops; everything off keeps every line that has no blank side."""

    exclude: tuple[Path, ...] = option(
        (), "Drop a source line that is a line of this file (repeatable).", "--exclude"
    )
    unique: bool = option(False, "Drop a line (pair) already kept.")
    scores: Path | None = option(  # what `s2s score` wrote for the pairs, one line per pair
        None, "What `s2s score` wrote for the pairs: keep the best --keep of them."
    )
    keep: float = option(1.0, "With --scores: the share of the scored pairs kept.")
    lines: int = option(0, "Stop once this many are kept (0: no limit).", between=(0, None))


@dataclass(frozen=True)
class FilterJob:
    """What `s2s filter` reads, writes, and drops."""

    sources: tuple[Path, ...] = option(
        REQUIRED, "Read this file (repeat it: read one after the other).", "--src"
    )
    out_src: Path = option(REQUIRED, "Write the kept source lines here.")
    targets: tuple[Path, ...] = option(  # none (a monolingual text), or one per source file
        (), "The target file of each --src (a parallel text).", "--tgt"
    )
    out_tgt: Path | None = option(None, "Write the kept target lines here.")
    rules: FilterRules = group(FilterRules())


class ScoreKind(Enum):
    """What a line of `s2s score` holds, and which of its fields ranks the pair (lower: better)."""

    PER_TOKEN = "log-probability per token"  # total<TAB>per token[<TAB>token scores]: higher is better
    DUAL = "dual cross-entropy"  # dual<TAB>H_fwd<TAB>H_rev (--reverse): lower is better

    @staticmethod
    def of(fields: list[str]) -> ScoreKind:
        return ScoreKind.DUAL if len(fields) == 3 and " " not in fields[2] else ScoreKind.PER_TOKEN

    def badness(self, fields: list[str]) -> float:
        """How bad the pair is, from its line's fields: this kind's numbers (else ValueError), every one
        finite (else NaN)."""
        if len(fields) not in ((3,) if self is ScoreKind.DUAL else (2, 3)):
            raise ValueError(f"{len(fields)} fields")
        numbers = [float(x) for x in fields[:2]]
        if len(fields) == 3:  # H_rev, or the token scores
            numbers += map(float, fields[2].split(" ") if self is ScoreKind.PER_TOKEN else fields[2:])
        if not all(math.isfinite(x) for x in numbers):
            return math.nan
        return numbers[0] if self is ScoreKind.DUAL else -numbers[1]


def filter_text(job: FilterJob) -> Counter[str]:
    """Write the lines (pairs) of `job` that pass its rules; returns how many were kept (`kept`) and
    how many each rule dropped."""
    _check(job)
    rules = job.rules
    excluded = {line for path in rules.exclude for line in read_lines(path)}
    ranked = _best_scored(rules.scores, rules.keep) if rules.scores is not None else None
    counts: Counter[str] = Counter()
    seen: set[tuple[str, str]] = set()
    with (
        _new_folders(out for out in (job.out_src, job.out_tgt) if out is not None),
        contextlib.ExitStack() as stack,
    ):
        src_out = stack.enter_context(atomic_output(job.out_src))
        tgt_out = stack.enter_context(atomic_output(job.out_tgt)) if job.out_tgt is not None else None
        for number, (src, tgt) in enumerate(_pairs(job.sources, job.targets)):
            if rules.lines and counts["kept"] == rules.lines:
                counts["stopped at --lines"] = 1  # the rest is not read
                break
            reason = (
                "blank"
                if not src.strip() or (tgt_out is not None and not tgt.strip())
                else "excluded"
                if src in excluded
                else "repeated"
                if rules.unique and (src, tgt) in seen
                else "not among the best scored"
                if ranked is not None and number not in ranked
                else ""
            )
            counts[reason or "kept"] += 1
            if reason:
                continue
            if rules.unique:
                seen.add((src, tgt))
            src_out.write(src + "\n")
            if tgt_out is not None:
                tgt_out.write(tgt + "\n")
        read = number + 1 if counts else 0
        if ranked is not None and "stopped at --lines" not in counts and read != ranked.pairs:
            raise DataError(f"--scores {rules.scores} has {ranked.pairs} lines for {read} pairs")
    return counts


def _check(job: FilterJob) -> None:
    rules = job.rules
    if job.targets and len(job.targets) != len(job.sources):
        raise Seq2SeqError(f"{len(job.sources)} --src file(s) but {len(job.targets)} --tgt: one per --src")
    if bool(job.targets) != (job.out_tgt is not None):
        raise Seq2SeqError("--tgt and --out-tgt go together: a parallel text in, its kept pairs out")
    if rules.scores is not None and not job.targets:
        raise Seq2SeqError(
            "--scores ranks the pairs of a parallel text (what `s2s score` wrote for them): give --tgt "
            "and --out-tgt too"
        )
    if not 0 < rules.keep <= 1 or (rules.keep < 1 and rules.scores is None):
        raise Seq2SeqError(f"--keep {rules.keep}: a share in (0, 1] of the pairs --scores ranks")
    inputs: dict[str, Path | None] = {f"--src {p}": p for p in job.sources}
    inputs |= {f"--tgt {p}": p for p in job.targets} | {f"--exclude {p}": p for p in rules.exclude}
    inputs["--scores"] = rules.scores
    check_outputs({"--out-src": job.out_src, "--out-tgt": job.out_tgt}, inputs)


@contextlib.contextmanager
def _new_folders(outputs: Iterable[Path]) -> Iterator[None]:
    """The missing folders of `outputs` made, and removed again (when still empty) if the block fails."""
    made: list[Path] = []  # deepest first
    for out in outputs:
        missing = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
        out.parent.mkdir(parents=True, exist_ok=True)
        made += [p for p in missing if p not in made]
    try:
        yield
    except BaseException:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _pairs(sources: tuple[Path, ...], targets: tuple[Path, ...]) -> Iterator[tuple[str, str]]:
    """(source, target) lines of the files in order; a monolingual text's targets are empty."""
    for i, src in enumerate(sources):
        src_lines = _lines(src)
        if not targets:
            yield from ((line, "") for line in src_lines)
            continue
        try:
            yield from zip(src_lines, _lines(targets[i]), strict=True)
        except ValueError:
            raise DataError(f"{src} and {targets[i]} have different numbers of lines") from None


def _lines(path: Path) -> Iterator[str]:
    return itertools.chain.from_iterable(iter_line_chunks(path))


@dataclass(frozen=True)
class _Ranked:
    """The pairs (by number, from 0) among the best scored, and how many lines the scores had."""

    best: frozenset[int]
    pairs: int

    def __contains__(self, number: int) -> bool:
        return number in self.best


def _best_scored(path: Path, keep: float) -> _Ranked:
    """The best `keep` share of the pairs `path` scores (ties: the earlier pair first); a pair without
    a score (each of its fields the same word of `NO_SCORE`, saying why) is never among them."""
    scored: list[tuple[float, int]] = []
    kind: ScoreKind | None = None
    number = -1
    for number, line in enumerate(_lines(path)):
        fields = line.split("\t")
        if fields[0] in NO_SCORE and fields.count(fields[0]) == len(fields):
            continue
        kind = kind or ScoreKind.of(fields)
        try:
            value = kind.badness(fields)
        except ValueError:
            raise DataError(
                f"{path}: line {number + 1} is not a line `s2s score` writes (numbers, or one of the words "
                f"{', '.join(sorted(NO_SCORE))} in every field)"
            ) from None
        if not math.isfinite(value):
            raise DataError(f"{path}: line {number + 1}: a score that is not a finite number")
        scored.append((value, number))
    best = sorted(scored)[: round(keep * len(scored))]
    return _Ranked(frozenset(n for _, n in best), number + 1)
