"""A self-contained HTML page about one evaluation, for people to look at.

It holds the scores with their signatures, the run's learning curves, a sentence-level view (best,
worst and random lines), BLEU by source length, and cross-attention heatmaps; for a reader's
predictions, a confusion matrix instead of the last three. Plots are PNGs embedded
as data: URIs, so the page opens anywhere without a network. matplotlib is optional
(`pip install s2s[report]`): `seq2seq.evaluation.figure` imports it, only when a report is written.
"""

from __future__ import annotations

import base64
import html
import io
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from seq2seq.evaluation.figure import new_figure
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.evaluation.reader_metrics import LabelMetricOptions, ReaderMetricOptions, TagMetricOptions
from seq2seq.evaluation.record import Evaluation, evaluation_record, score_cell
from seq2seq.files import write_text
from seq2seq.run.layout import RunDir
from seq2seq.translate.attention import AttentionMap

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from seq2seq.evaluation.evaluation_plan import Translated

ATTENTION_EXAMPLES = 3
ATTENTION_MAX_TOKENS = 40  # longer sentences make unreadable heatmaps
ATTENTION_TRIES = 50  # lines to look at for short enough examples
CONFUSION_NUMBERS = 25  # up to this many labels, each cell shows its count


def learning_curves_figure(records: Sequence[dict[str, Any]]) -> Figure | None:
    """Loss, validation BLEU and learning rate against the step, from metrics.jsonl records."""
    train = [r for r in records if r.get("kind") == "train"]
    valid = [r for r in records if r.get("kind") == "valid"]
    bleu = [r for r in valid if r.get("valid_bleu") is not None]
    if not train and not valid:
        return None
    figure = new_figure(12, 3.5)
    loss_ax, bleu_ax, lr_ax = figure.subplots(1, 3)
    loss_ax.plot([r["step"] for r in train], [r["train_loss"] for r in train], label="train loss")
    loss_ax.plot([r["step"] for r in valid], [r["valid_loss"] for r in valid], "o-", label="valid loss")
    loss_ax.legend()
    directions = sorted(
        {key[len("valid_bleu.") :] for r in bleu for key in r if key.startswith("valid_bleu.")}
    )
    mean = " (mean of the directions)" if directions else ""
    bleu_ax.plot(
        [r["step"] for r in bleu],
        [r["valid_bleu"] for r in bleu],
        "o-",
        color="tab:green",
        label=f"BLEU{mean}",
    )
    for direction in directions:  # a multilingual run's, each on its own
        steps = [(r["step"], r[f"valid_bleu.{direction}"]) for r in bleu if f"valid_bleu.{direction}" in r]
        bleu_ax.plot(*zip(*steps, strict=True), ".-", linewidth=1, label=direction)
    if directions:
        bleu_ax.legend(fontsize="small")
    lr_ax.plot([r["step"] for r in train], [r["lr"] for r in train], color="tab:purple")
    titles = {loss_ax: "loss", bleu_ax: "validation BLEU", lr_ax: "learning rate"}
    for ax, title in titles.items():
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    return figure


@dataclass
class LengthBucket:
    low: int  # inclusive range of the lengths of the lines in it
    high: int
    lines: list[int]  # 0-based line numbers


def length_buckets(lengths: Sequence[int], count: int = 5) -> list[LengthBucket]:
    """Up to `count` length ranges holding about the same number of lines each (quantile edges)."""
    ordered = sorted(lengths)
    edges = sorted({ordered[(i * len(ordered)) // count] for i in range(1, count)} - {ordered[0]})
    bounds = zip([ordered[0], *edges], [*(e - 1 for e in edges), ordered[-1]], strict=True)
    return [LengthBucket(lo, hi, [i for i, n in enumerate(lengths) if lo <= n <= hi]) for lo, hi in bounds]


def length_figure(
    evaluation: Evaluation, options: MetricOptions, lengths: Sequence[int], unit: str
) -> Figure:
    """Corpus BLEU of each system per length bucket; `lengths` has one entry per line, in `unit`s."""
    e = evaluation
    buckets = length_buckets(lengths)
    bleu = options.bleu()
    figure = new_figure(max(5.0, 1.2 * len(buckets) * len(e.systems)), 3.5)
    ax = figure.subplots()
    width = 0.8 / len(e.systems)
    for k, system in enumerate(e.systems):
        scores = [
            bleu.corpus_score(
                [system.file.lines[i] for i in b.lines], [[r.lines[i] for i in b.lines] for r in e.references]
            ).score
            for b in buckets
        ]
        bars = ax.bar([i + k * width for i in range(len(buckets))], scores, width, label=system.name)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(buckets))])
    ax.set_xticklabels(
        [f"{b.low}{f'–{b.high}' if b.high > b.low else ''}\n(n={len(b.lines)})" for b in buckets]
    )
    ax.set_xlabel(unit)
    ax.set_ylabel("BLEU")
    ax.legend()
    return figure


def line_lengths(e: Evaluation, translated: Translated | None) -> tuple[list[int], str]:
    """Source length per line: the model's subword tokens, else words (of the reference without a source)."""
    if e.source is None:
        return [len(line.split()) for line in e.references[0].lines], "reference length in words"
    if translated is None:
        return [len(line.split()) for line in e.source.lines], "source length in words"
    lengths = map(len, translated.engine.tokenizers.src.encode(e.source.lines))
    return list(lengths), "source length in subword tokens"


def attention_figure(attention: AttentionMap) -> Figure:
    rows, cols = attention.weights.shape
    figure = new_figure(min(2 + 0.35 * cols, 16), min(1.5 + 0.3 * rows, 16))
    ax = figure.subplots()
    image = ax.imshow(attention.weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(cols), attention.source, rotation=90)
    ax.set_yticks(range(rows), attention.target)
    ax.set_xlabel("source")
    ax.set_ylabel("target (predicted)")
    figure.colorbar(image, ax=ax)
    return figure


def pick_examples(scores: Sequence[tuple[float, float]], count: int, seed: int) -> dict[str, list[int]]:
    """0-based lines with the best and worst sentence BLEU (chrF breaks ties), and a seeded random few."""
    count = min(count, len(scores))
    return {
        "best": sorted(range(len(scores)), key=lambda i: (-scores[i][0], -scores[i][1], i))[:count],
        "worst": sorted(range(len(scores)), key=lambda i: (scores[i], i))[:count],
        "random": sorted(random.Random(seed).sample(range(len(scores)), count)),
    }


def sentence_scores(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]], options: MetricOptions
) -> list[tuple[float, float]]:
    """(sentence BLEU, sentence chrF) per line; BLEU with effective order, as sentence BLEU needs."""
    bleu, chrf = options.bleu(sentence=True), options.chrf()
    out = []
    for i, hyp in enumerate(hypotheses):
        refs = [r[i] for r in references]
        out.append((bleu.sentence_score(hyp, refs).score, chrf.sentence_score(hyp, refs).score))
    return out


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def image(figure: Figure, alt: str) -> str:
    """An <img> holding the figure as an embedded PNG (a data: URI), so the page needs no other file."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def scores_section(evaluation: Evaluation) -> str:
    e = evaluation
    first = e.systems[0].scores
    keys = list(first)  # METRICS, or a reader's
    rows = [[s.name, *(score_cell(e, i, k) for k in keys)] for i, s in enumerate(e.systems)]
    signatures = e.bootstrap.signatures if e.bootstrap else {k: first[k].signature for k in keys}
    parts = [
        "<h2>Scores</h2>",
        table(["system", *(first[k].name for k in keys)], rows),
        table(["metric", "signature"], [[first[k].name, signatures[k]] for k in keys]),
    ]
    if e.bootstrap:
        parts.append(
            f"<p>Score (bootstrap mean ± 95% CI) and p-value of sacrebleu's paired bootstrap test "
            f"({e.bootstrap.samples} resamples) against the baseline {html.escape(e.systems[0].name)}; "
            "* p &lt; 0.05: the difference is unlikely to be chance."
            + (" TER: lower is better." if "ter" in keys else "")
            + "</p>"
        )
    return "\n".join(parts)


def sentences_section(
    evaluation: Evaluation, options: MetricOptions, count: int, seed: int
) -> tuple[str, list[int]]:
    """Best, worst and random lines of the first system; also returns the random lines."""
    e, system = evaluation, evaluation.systems[0]
    scores = sentence_scores(system.file.lines, [r.lines for r in e.references], options)
    picked = pick_examples(scores, count, seed)
    source = e.source.lines if e.source else ["" for _ in system.file.lines]
    refs = e.references[0].lines
    parts = [f"<h2>Sentences of {html.escape(system.name)}</h2>"]
    header = ["line", "BLEU", "chrF", "source", "reference", "hypothesis"]
    for title, lines in picked.items():
        rows = [
            [i + 1, f"{scores[i][0]:.1f}", f"{scores[i][1]:.1f}", source[i], refs[i], system.file.lines[i]]
            for i in lines
        ]
        parts += [f"<h3>{title}</h3>", table(header, rows)]
    return "\n".join(parts), picked["random"]


def attention_section(evaluation: Evaluation, translated: Translated, candidates: Sequence[int]) -> str:
    """Heatmaps for a few lines short enough to read, teacher-forced on the model's own translation."""
    e = evaluation
    assert e.source is not None
    parts = ["<h2>Cross-attention (last decoder layer, mean over heads)</h2>"]
    tried = [*candidates, *range(len(e.source.lines))][:ATTENTION_TRIES]
    for i in tried:
        source, hyp = e.source.lines[i], e.systems[0].file.lines[i]
        if len(parts) > ATTENTION_EXAMPLES:
            break
        if not source.strip() or not hyp.strip():
            continue
        attention = translated.engine.attention_map(source, hyp, translated.request)
        if max(attention.weights.shape) <= ATTENTION_MAX_TOKENS:
            parts.append(f"<h3>line {i + 1}</h3>" + image(attention_figure(attention), f"line {i + 1}"))
    return "\n".join(parts)


@dataclass(frozen=True)
class ReportBody:
    """What a report shows below the scores, as the type of the evaluation's options chooses
    (`BODIES`): a translation's BLEU by length, example sentences and attention maps, or a reader's
    confusion matrices."""

    evaluation: Evaluation
    translated: Translated | None  # draws attention maps (with the source)
    examples: int
    seed: int

    def translations(self, options: MetricOptions) -> list[str]:
        e = self.evaluation
        sentences, random_lines = sentences_section(e, options, self.examples, self.seed)
        lengths, unit = line_lengths(e, self.translated)
        parts = [
            "<h2>BLEU by length</h2>",
            image(length_figure(e, options, lengths, unit), "BLEU by length"),
            sentences,
        ]
        if self.translated is not None and e.source is not None:
            parts.append(attention_section(e, self.translated, random_lines))
        return parts

    def confusions(self, options: ReaderMetricOptions) -> list[str]:
        """A confusion matrix of each system against the first reference."""
        e = self.evaluation
        parts = ["<h2>Confusion matrices</h2>"]
        for system in e.systems:
            pairs = options.confusion_pairs(e.references[0].lines, system.file.lines)
            labels, counts = confusion_counts(pairs)
            title = f"{system.name}: {options.noun}"
            parts.append(image(confusion_figure(labels, counts, title), title))
        return parts


# what a report shows below the scores, by the type of the options the evaluation scored with (the
# options only score: they know nothing of the report)
BODIES: dict[type, Callable[[ReportBody, Any], list[str]]] = {
    MetricOptions: ReportBody.translations,
    LabelMetricOptions: ReportBody.confusions,  # where the labels go wrong, not BLEU or attention
    TagMetricOptions: ReportBody.confusions,  # where the tags go wrong
}


def write_report(
    evaluation: Evaluation,
    directory: Path,
    translated: Translated | None = None,
    examples: int = 5,
    seed: int = 0,
) -> Path:
    """Write DIRECTORY/index.html; attention heatmaps need the engine (`translated`) and the source."""
    e = evaluation
    setup = {k: v for k, v in evaluation_record(e).items() if k not in ("systems", "bootstrap")}
    parts = [scores_section(e), "<h2>Setup</h2>", f"<pre>{html.escape(json.dumps(setup, indent=2))}</pre>"]
    run_dir = e.made_by.run_dir
    curves = learning_curves_figure(RunDir(run_dir).read_metrics()) if run_dir else None
    if curves is not None:
        parts += ["<h2>Learning curves</h2>", image(curves, "learning curves")]
    parts += BODIES[type(e.options)](ReportBody(e, translated, examples, seed), e.options)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "index.html"
    write_text(path, PAGE.format(body="\n".join(parts)))
    return path


def confusion_counts(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], np.ndarray]:
    """(labels, counts[reference label, predicted label]) over (reference, predicted) pairs: of lines
    or of words (`ReaderMetricOptions.confusion_pairs`)."""
    labels = sorted({label for pair in pairs for label in pair})
    index = {label: i for i, label in enumerate(labels)}
    counts = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for r, h in pairs:
        counts[index[r], index[h]] += 1
    return labels, counts


def confusion_figure(labels: Sequence[str], counts: np.ndarray, title: str) -> Figure:
    size = min(2 + 0.5 * len(labels), 14)
    figure = new_figure(size + 1, size)
    ax = figure.add_subplot()
    ax.imshow(counts, cmap="Blues")
    ax.set_xticks(range(len(labels)), labels, rotation=90)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("reference")
    ax.set_title(title)
    if len(labels) <= CONFUSION_NUMBERS:
        for (i, j), n in np.ndenumerate(counts):
            ax.text(
                j, i, str(n), ha="center", va="center", color="white" if n > counts.max() / 2 else "black"
            )
    return figure


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>s2s evaluation</title>
<style>
body {{ font-family: sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }}
th {{ background: #f0f0f0; }}
pre {{ background: #f7f7f7; padding: 1em; overflow-x: auto; }}
img {{ max-width: 100%; }}
</style>
</head>
<body>
<h1>s2s evaluation</h1>
{body}
</body>
</html>
"""
