"""What a config's training augmentation costs, and what its tokenizer makes of modified text.

    python -m scripts.augment_cost configs/multi30k_de_en_augment.yaml

Prints two tables (docs/augmentation.md):

- pieces per word of the validation set, as given and modified each way (`s2s evaluate --augment`'s
  modifiers), by a tokenizer trained on the corpora as given and by one trained on the sample modified
  as training modifies it (what `s2s train` does for a corpus with an `augment:` block);
- the data path over one epoch, with the augmentation and without it: the seconds to plan the epoch
  and build every batch, the batches and their padding.

Everything it makes (two tokenizers, the prepared corpus) goes into a temporary directory, removed at
the end; the config's run directory is not touched.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from seq2seq.config import Config, load_config
from seq2seq.config.augment import AugmentConfig
from seq2seq.data.augment import LINE_MODIFIERS
from seq2seq.data.augmented import corpus_augmenter
from seq2seq.data.prepared import ensure_prepared_corpus, load_prepared, read_manifests
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import Tokenizer, tokenizer_checksums, train_or_load_tokenizers
from seq2seq.errors import Seq2SeqError
from seq2seq.evaluation.augmented import modified_lines
from seq2seq.run.checks import data_checksums
from seq2seq.training.distributed import DistInfo
from seq2seq.training.order import BatchOrder
from seq2seq.training.state import Progress


def as_given(cfg: Config) -> Config:
    """`cfg` with no corpus modified."""
    corpora = tuple(dataclasses.replace(c, augment=AugmentConfig()) for c in cfg.data.corpora)
    return dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, corpora=corpora))


def pieces_table(cfg: Config, work: Path) -> str:
    """Pieces per word of the validation set's sides, as given and modified, by both tokenizers."""
    tokenizers = {}
    for name, config in (("as given", as_given(cfg)), ("augmented", cfg)):
        directory = work / f"tokenizer {name}"
        train_or_load_tokenizers(config.tokenizer, config.data.training_corpora(), directory)
        tokenizers[name] = Tokenizer(directory / "spm.model")
    rows = [
        "| validation text | pieces per word, sample as given | pieces per word, sample augmented |",
        "|---|---|---|",
    ]
    for side, path in (("source", cfg.data.valid_src), ("target", cfg.data.valid_tgt)):
        lines = read_lines(path)
        words = max(sum(len(line.split()) for line in lines), 1)
        for modifier in ("as given", *LINE_MODIFIERS):
            text = lines if modifier == "as given" else modified_lines(lines, modifier, seed=1)
            cells = [sum(map(len, t.encode(text))) / words for t in tokenizers.values()]
            rows.append(f"| {side}, {modifier} | {cells[0]:.2f} | {cells[1]:.2f} |")
    return "\n".join(rows)


def epoch_table(cfg: Config, work: Path) -> str:
    """One epoch of the data path with the augmentation and without, on the augmented tokenizer."""
    tokenizer_dir = work / "tokenizer augmented"
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, prepared_dir=str(work / "prepared")))
    sums = tokenizer_checksums(tokenizer_dir, cfg.tokenizer.joint)
    ensure_prepared_corpus(cfg, tokenizer_dir, data_checksums(cfg), sums)
    corpora = cfg.data.training_corpora()
    data = load_prepared(Path(cfg.data.prepared_dir), corpora)
    manifests = read_manifests(Path(cfg.data.prepared_dir), corpora)
    tokenizers = train_or_load_tokenizers(cfg.tokenizer, corpora, tokenizer_dir, may_train=False)
    augment = corpus_augmenter(data, corpora, manifests, tokenizers, cfg.data.max_len)
    rows = [
        "| data path, one epoch | seconds | batches | padding | target tokens |",
        "|---|---|---|---|---|",
    ]
    for name, augmenter in (("as given", None), ("augmented", augment)):
        start = time.perf_counter()
        order = BatchOrder(data.costs(), data.target_tokens(), cfg.train, DistInfo(), None, augmenter)
        at, padded, real, targets, batches = Progress(), 0, 0, 0, 0
        while at.epoch == 0:
            for batch in order.next_step(at).build(data):  # padding as training logs it
                padded += batch.src.numel() + batch.tgt_out.numel()
                real += batch.num_src_tokens + batch.num_tgt_tokens
                targets += batch.num_tgt_tokens
                batches += 1
        seconds = time.perf_counter() - start
        rows.append(f"| {name} | {seconds:.2f} | {batches:,} | {1 - real / padded:.1%} | {targets:,} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        cfg = load_config(argv[0])
        if not any(c.augment.active for c in cfg.data.corpora):
            raise Seq2SeqError(f"no corpus of {argv[0]} has an augment: block")
        with tempfile.TemporaryDirectory(prefix="augment-cost-") as scratch:
            print(pieces_table(cfg, Path(scratch)), end="\n\n")
            print(epoch_table(cfg, Path(scratch)))
    except Seq2SeqError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
