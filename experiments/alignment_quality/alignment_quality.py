"""How well a run's attention aligns words, and how well it puts inline tags back, against eflomal.

    python -m experiments.alignment_quality.alignment_quality RUN_DIR --src val.de --ref val.en \\
        [--align-with train.de train.en] [--seed 1] [--engine s2s] [--bleu] [--json OUT]

The reference alignment of each (source, reference) line pair is eflomal's, both directions
symmetrized with grow-diag-final-and (`seq2seq.align.eflomal_aligner`); `--align-with SRC TGT`
aligns those lines with them (eflomal learns from every line it is given) and keeps only the pairs
measured. eflomal samples without a seed of ours: its links, and so the tags planted, can differ a
little from one run of the script to the next.

- AER: the run's word links, its attention teacher-forced on the reference (`AnnotatedEngine.word_links`),
  against eflomal's as the sure links: corpus AER, precision and recall.
- Tag placement: in each line, `random.Random(seed)` picks a source span of 1-3 words whose
  eflomal-aligned reference words are contiguous and linked to no word outside it (a consistent
  phrase pair) and wraps it in `<b>...</b>`; a line without one gets no tag. The tag is put on the
  reference words by `place.by_alignment` with the run's links, with eflomal's (a check, not a bound: the
  expected span is read off these links, so it is exact unless placing is broken) and by
  `place.by_position` (the baseline); a placement is exact when the element wraps the expected span.
- `--bleu`: the tagged sources translated with `--markup html`, tags stripped, and the plain sources
  translated, each scored against the references (sacreBLEU); the two should agree within 0.1.

A Markdown table goes to stdout with the machine, date and command; `--json OUT` writes the numbers.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.machine import cpu_model
from seq2seq.align import Pair
from seq2seq.align.aer import AlignmentScores, alignment_scores
from seq2seq.align.eflomal_aligner import align_words
from seq2seq.commands.engines import Chosen, choose_engine
from seq2seq.data.textio import read_lines
from seq2seq.errors import DataError, Seq2SeqError
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.files import write_text
from seq2seq.markup.parse import HTML, parse
from seq2seq.markup.place import PlacementRule, by_alignment, by_position, place
from seq2seq.translate.aligned import AnnotatedEngine, Annotations
from seq2seq.translate.options import RUN_DEFAULTS
from seq2seq.translate.placement import AUTO
from seq2seq.translate.request import Request

Span = tuple[int, int]  # words [start, end)
MAX_SPAN = 3  # source words a planted tag wraps, at most
ROWS = ("model attention", "eflomal's links (a check: they define the span)", "relative position (baseline)")


@dataclass(frozen=True)
class Planted:
    """One line's tag: the source as html with `<b>...</b>` around 1-3 of its words, and the reference
    words [start, end) the tag should wrap once placed."""

    marked: str
    expected: Span


def consistent_spans(links: Sequence[Pair], m: int) -> list[tuple[Span, Span]]:
    """(source span, target span) of every phrase pair of 1-3 source words (of `m`) that `links`
    make consistent: the span's linked target words are contiguous, and no word outside it is linked
    into them."""
    found = []
    for start in range(m):
        for end in range(start + 1, min(start + MAX_SPAN, m) + 1):
            targets = {j for i, j in links if start <= i < end}
            if not targets:
                continue
            low, high = min(targets), max(targets) + 1
            contiguous = len(targets) == high - low
            if contiguous and not any(low <= j < high and not start <= i < end for i, j in links):
                found.append(((start, end), (low, high)))
    return found


def plant_tags(sources: Sequence[str], links: Sequence[Sequence[Pair]], seed: int) -> list[Planted | None]:
    """One tag per line around a consistent phrase chosen by `random.Random(seed)`; None for a line
    that has none. The words are html-escaped, so the marked line parses back into them."""
    rng = random.Random(seed)
    planted: list[Planted | None] = []
    for source, pairs in zip(sources, links, strict=True):
        words = source.split()
        spans = consistent_spans(pairs, len(words))
        if not spans:
            planted.append(None)
            continue
        (start, end), expected = rng.choice(spans)
        escaped = [html.escape(w, quote=False) for w in words]
        marked = " ".join([*escaped[:start], "<b>" + " ".join(escaped[start:end]) + "</b>", *escaped[end:]])
        assert parse(marked, HTML).words == tuple(words), marked
        planted.append(Planted(marked, expected))
    return planted


def reference_links(
    src: Sequence[str], ref: Sequence[str], align_with: tuple[Sequence[str], Sequence[str]] | None
) -> list[list[Pair]]:
    """eflomal's symmetrized links of each (src, ref) pair, aligned after the `align_with` corpus."""
    extra_src, extra_tgt = align_with or ([], [])
    return align_words([*extra_src, *src], [*extra_tgt, *ref])[len(extra_src) :]


def exact_share(
    planted: Sequence[Planted | None],
    refs: Sequence[str],
    links: Sequence[Sequence[Pair]],
    rule: PlacementRule,
) -> float:
    """The percentage of planted tags that `rule` with `links` puts exactly around the expected words."""
    exact = tagged = 0
    for tag, ref, pairs in zip(planted, refs, links, strict=True):
        if tag is None:
            continue
        out = parse(place(parse(tag.marked, HTML), ref, pairs, rule), HTML)
        element = out.tags[0]
        exact += (element.start, element.end) == tag.expected
        tagged += 1
    return 100.0 * exact / tagged if tagged else 0.0


def bleu_check(
    chosen: Chosen,
    request: Request,
    src: Sequence[str],
    planted: Sequence[Planted | None],
    refs: Sequence[str],
) -> dict[str, object]:
    """BLEU of the tagged sources translated with markup, tags stripped, and of the plain sources."""
    tagged = [p.marked if p else html.escape(s, quote=False) for s, p in zip(src, planted, strict=True)]
    marked_out = AnnotatedEngine(chosen.engine, Annotations(markup=HTML.name)).translate(tagged, request)
    stripped = [parse(t.texts[0], HTML).text if t.texts else "" for t in marked_out]
    plain = [t.texts[0] if t.texts else "" for t in chosen.engine.translate(list(src), request)]
    metric = MetricOptions().bleu()
    scores = {
        name: metric.corpus_score(hyps, [list(refs)]).score
        for name, hyps in (("tagged", stripped), ("plain", plain))
    }
    return {
        **scores,
        "equal": abs(scores["tagged"] - scores["plain"]) <= 0.1,
        "signature": str(metric.get_signature()),
    }


def read_pair(src: Path, tgt: Path) -> tuple[list[str], list[str]]:
    """Two files of a parallel corpus, line for line; DataError where they are not."""
    a, b = read_lines(src), read_lines(tgt)
    if len(a) != len(b):
        raise DataError(f"{src} has {len(a)} lines and {tgt} {len(b)}: give the two sides line for line")
    if not a:
        raise DataError(f"{src} is empty")
    return a, b


def measure(args: argparse.Namespace) -> dict[str, object]:
    """Every number of the table, and what they were measured on."""
    src, ref = read_pair(args.src, args.ref)
    align_with = read_pair(*args.align_with) if args.align_with else None
    chosen = choose_engine(args.run_dir, args.engine, RUN_DEFAULTS, AUTO)
    request = Request.of(chosen.options, scores=False)
    eflomal = reference_links(src, ref, align_with)
    annotated = AnnotatedEngine(chosen.engine, Annotations(alignments=True))
    model = [annotated.word_links(s, r, request) for s, r in zip(src, ref, strict=True)]
    scores: AlignmentScores = alignment_scores(model, eflomal)
    planted = plant_tags(src, eflomal, args.seed)
    links = {ROWS[0]: model, ROWS[1]: eflomal, ROWS[2]: eflomal}
    rules = {ROWS[0]: by_alignment, ROWS[1]: by_alignment, ROWS[2]: by_position}
    return {
        "run": str(args.run_dir),
        "engine": chosen.engine.describe(),
        "src": str(args.src),
        "ref": str(args.ref),
        "align_with": [str(p) for p in args.align_with] if args.align_with else None,
        "seed": args.seed,
        "lines": len(src),
        "tagged_lines": sum(p is not None for p in planted),
        "aer": {"aer": scores.aer, "precision": scores.precision, "recall": scores.recall},
        "exact": {row: exact_share(planted, ref, links[row], rules[row]) for row in ROWS},
        "bleu": bleu_check(chosen, request, src, planted, ref) if args.bleu else None,
        "planted": [p.marked if p else None for p in planted],
    }


def table(results: dict) -> str:
    """The Markdown table and the lines around it."""
    aer, tagged = results["aer"], results["tagged_lines"]
    rows = [
        "| links | AER | precision | recall | tag placed exactly | lines with a tag |",
        "|---|---|---|---|---|---|",
        f"| {ROWS[0]} | {aer['aer']:.3f} | {aer['precision']:.3f} | {aer['recall']:.3f} "
        f"| {results['exact'][ROWS[0]]:.1f}% | {tagged} |",
        *(f"| {row} | — | — | — | {results['exact'][row]:.1f}% | {tagged} |" for row in ROWS[1:]),
        "",
        f"AER over {results['lines']} line pairs against eflomal's links; {results['lines'] - tagged} "
        "lines had no consistent phrase of 1-3 words and got no tag.",
    ]
    if (bleu := results["bleu"]) is not None:
        verdict = "equal" if bleu["equal"] else "NOT equal"
        rows.append(
            f"BLEU, tagged and tags stripped: {bleu['tagged']:.2f}; untagged: {bleu['plain']:.2f} "
            f"({verdict} within 0.1); sacreBLEU signature {bleu['signature']}"
        )
    engine = results["engine"]
    rows += [
        f"Run {results['run']}, engine {engine['engine']} on {engine['device']} ({engine['precision']}).",
        f"Measured {results['date']} on {results['cpu']}.",
        f"Command: {results['command']}",
    ]
    return "\n".join(rows)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.alignment_quality.alignment_quality",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("--src", type=Path, required=True, help="source lines")
    parser.add_argument("--ref", type=Path, required=True, help="their reference translations")
    parser.add_argument(
        "--align-with", nargs=2, type=Path, metavar=("SRC", "TGT"), help="more parallel text for eflomal"
    )
    parser.add_argument("--seed", type=int, default=1, help="which phrases get a tag")
    parser.add_argument("--engine", choices=("s2s", "ctranslate2"), default="s2s")
    parser.add_argument("--bleu", action="store_true", help="also translate the set, tagged and not")
    parser.add_argument("--json", type=Path, help="write the numbers to this file")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        results = measure(args)
        results |= {
            "cpu": cpu_model(),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "command": shlex.join(["python", "-m", "experiments.alignment_quality.alignment_quality", *argv]),
        }
        if args.json:
            write_text(args.json, json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    except Seq2SeqError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
