"""What fixed batch shapes (train.shape_multiple) cost a corpus: batches an epoch, the share of
positions that are padding, and the number of shapes, at each max_tokens and multiple.

    python -m benchmarks.batch_shapes RUN_DIR SRC TGT [--max-tokens 4096,32768] [--multiples 0,8,16]

RUN_DIR's tokenizer cuts SRC and TGT (a training corpus, a line each) into pieces; one epoch is
batched as training batches it (`token_batches` of the rounded lengths, seed 1) and padded as
`BatchShapes.fit` pads it. Prints a markdown table (docs/training.md has one).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from seq2seq.batching import token_batches
from seq2seq.data.tokenizer import load_tokenizers
from seq2seq.training.shapes import BatchShapes


def epoch_cost(src: np.ndarray, tgt: np.ndarray, max_tokens: int, multiple: int) -> list[str]:
    """One table row: batches, padding and shapes of one epoch of pairs with these piece counts."""
    shapes = BatchShapes(multiple, max_tokens)
    costs = np.maximum(src, tgt) + 1  # source + <eos>, <bos> + target: `ParallelData.costs`
    batches = token_batches(shapes.costs(costs), max_tokens, seed=1, epoch=0)
    positions, seen = 0, set[tuple[int, ...]]()
    for batch in batches:
        s, t = int(src[batch].max()) + 1, int(tgt[batch].max()) + 1
        if multiple:
            rows, length = shapes.shape(len(batch), max(s, t))
            positions += 2 * rows * length
            seen.add((rows, length))
        else:
            positions += len(batch) * (s + t)
            seen.add((len(batch), s, t))
    padding = 1 - int((src + tgt + 2).sum()) / positions
    return [f"{max_tokens:,}", str(multiple), str(len(batches)), f"{100 * padding:.1f} %", str(len(seen))]


def main() -> None:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.batch_shapes", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("run_dir", type=Path, help="a run whose tokenizer cuts the corpus")
    p.add_argument("src", type=Path)
    p.add_argument("tgt", type=Path)
    p.add_argument("--max-tokens", default="4096,32768", help="comma-separated")
    p.add_argument("--multiples", default="0,8,16", help="comma-separated (0: each batch its own length)")
    a = p.parse_args()
    saved = yaml.safe_load((a.run_dir / "config.yaml").read_text(encoding="utf-8"))
    tokenizers = load_tokenizers(a.run_dir / "tokenizer", saved["tokenizer"]["joint"])
    lengths = []
    for path, tokenizer in ((a.src, tokenizers.src), (a.tgt, tokenizers.tgt)):
        lines = path.read_text(encoding="utf-8").splitlines()
        lengths.append(np.array([len(ids) for ids in tokenizer.encode(lines)]))
    rows = [
        epoch_cost(lengths[0], lengths[1], int(max_tokens), int(multiple))
        for max_tokens in a.max_tokens.split(",")
        for multiple in a.multiples.split(",")
    ]
    header = [
        "`train.max_tokens`",
        "`shape_multiple`",
        "batches an epoch",
        "padding (share of positions)",
        "shapes",
    ]
    for row in [header, ["---"] * len(header), *rows]:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
