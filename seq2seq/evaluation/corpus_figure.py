"""`s2s prepare --figure`: the prepared corpora in one picture (the report extra's matplotlib).

Left, each corpus's token-length distribution per side (the share of its kept pairs at each length);
right, what each cleaning rule dropped from each corpus. Drawn from the manifests alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from seq2seq.data.cleaning import REASON_NAMES, REASONS
from seq2seq.evaluation.figure import new_figure
from seq2seq.files import atomic_output


def write_corpus_figure(manifests: dict[str, dict[str, Any]], path: Path) -> None:
    """A PNG of the length distributions and the dropped pairs of `manifests` (name -> manifest)."""
    figure = new_figure(12, 4)
    lengths_ax, dropped_ax = figure.subplots(1, 2)
    for name, manifest in manifests.items():
        for side, style in (("src", "-"), ("tgt", "--")):
            counts = np.asarray(manifest["stats"][side]["histogram"], dtype=np.float64)
            share = counts / max(counts.sum(), 1)
            lengths_ax.plot(np.arange(len(share)), share, style, label=f"{name} {side}")
    lengths_ax.set(title="token length of kept pairs", xlabel="tokens", ylabel="share of pairs")
    lengths_ax.legend()
    width = 0.8 / max(len(manifests), 1)
    for i, (name, manifest) in enumerate(manifests.items()):
        dropped = [manifest["counts"][reason] for reason in REASONS]
        dropped_ax.barh(np.arange(len(REASONS)) + i * width, dropped, height=width, label=name)
    dropped_ax.set_yticks(np.arange(len(REASONS)) + width * (len(manifests) - 1) / 2)
    dropped_ax.set_yticklabels([REASON_NAMES[reason] for reason in REASONS])
    dropped_ax.invert_yaxis()
    dropped_ax.set(title="pairs dropped, by the first rule broken", xlabel="pairs")
    dropped_ax.legend()
    with atomic_output(path, binary=True) as out:
        figure.savefig(out, format="png", dpi=100)
