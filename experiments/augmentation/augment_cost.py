"""What a config's training augmentation costs, and what its tokenizer makes of modified text.

    python -m experiments.augmentation.augment_cost configs/multi30k_de_en_augment.yaml

Prints two tables (README.md here, docs/augmentation.md):

- pieces per word of the validation set, as given and modified each way (`s2s evaluate --augment`'s
  modifiers), by a tokenizer trained on the corpora as given and by one trained on the sample modified
  as training modifies it (what `s2s train` does for a corpus with an `augment:` block);
- the data path over one epoch, with the augmentation and without it: the seconds to plan the epoch
  and build every batch, the batches and their padding.

The tokenizers and the prepared corpus are made by the commands' own jobs (`s2s train
--tokenizer-only` for the corpora as given, `s2s prepare` for the config: `seq2seq.training.training_plan` and
`seq2seq.training.setup`), in run directories inside a temporary directory removed at the end; the
config's run directory and its `data.prepared_dir` are not touched. The epoch is training's own batch
order (`seq2seq.training.order`), read here without training a model, which no command does.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

from seq2seq.config import Config, load_config
from seq2seq.data.augment import LINE_MODIFIERS
from seq2seq.data.augmented import corpus_augmenter
from seq2seq.data.prepared import corpus_mixture, load_prepared, prepared_corpus_dir, read_manifests
from seq2seq.data.textio import read_lines
from seq2seq.data.tokenizer import TokenizerPair, load_tokenizers
from seq2seq.errors import Seq2SeqError
from seq2seq.evaluation.modified_sets import modified_lines
from seq2seq.run.layout import RunDir
from seq2seq.training.distributed import DistInfo
from seq2seq.training.order import BatchOrder
from seq2seq.training.request import prepare_request
from seq2seq.training.setup import claim, make_tokenizers_only, prepare_corpus
from seq2seq.training.state import Progress
from seq2seq.training.training_plan import plan_preparation


def as_given(config: Path) -> list[str]:
    """The `--set` that trains `config`'s tokenizer on its corpora with no `augment:` block."""
    corpora = yaml.safe_load(config.read_text(encoding="utf-8"))["data"]["corpora"]
    plain = [{key: value for key, value in corpus.items() if key != "augment"} for corpus in corpora]
    return ["data.corpora=" + yaml.safe_dump(plain, default_flow_style=True, width=1 << 30).strip()]


def made(config: Path, run: Path, overrides: list[str], corpus: bool) -> Config:
    """The config's tokenizer, and with `corpus` its prepared corpus, made in the run directory `run`
    as `s2s train --tokenizer-only` and `s2s prepare` make them; the config as the run holds it."""
    plan = plan_preparation(prepare_request(config, [f"run_dir={run}", "data.prepared_dir=", *overrides]))
    with claim(plan, DistInfo()) as claimed:
        if corpus:
            prepare_corpus(claimed, workers=0)
        else:
            make_tokenizers_only(claimed, DistInfo())
    return plan.cfg


def tokenizers(cfg: Config) -> TokenizerPair:
    return load_tokenizers(RunDir(cfg.run_dir).tokenizer_dir, cfg.tokenizer.joint)


def pieces_table(given: Config, augmented: Config) -> str:
    """Pieces per word of the validation set's sides, as given and modified, by both tokenizers."""
    pairs = [tokenizers(given), tokenizers(augmented)]
    rows = [
        "| validation text | pieces per word, sample as given | pieces per word, sample augmented |",
        "|---|---|---|",
    ]
    for side, path in (("source", augmented.data.valid_src), ("target", augmented.data.valid_tgt)):
        lines = read_lines(path)
        words = max(sum(len(line.split()) for line in lines), 1)
        for modifier in ("as given", *LINE_MODIFIERS):
            text = lines if modifier == "as given" else modified_lines(lines, modifier, seed=1)
            sides = [pair.src if side == "source" else pair.tgt for pair in pairs]
            cells = [sum(map(len, t.encode(text))) / words for t in sides]
            rows.append(f"| {side}, {modifier} | {cells[0]:.2f} | {cells[1]:.2f} |")
    return "\n".join(rows)


def epoch_table(cfg: Config) -> str:
    """One epoch of the data path with the augmentation and without, on the augmented tokenizer and
    the prepared corpus of the run `cfg` names, the epoch drawn as `s2s train` draws it."""
    corpora, corpus_dir = cfg.data.training_corpora(), prepared_corpus_dir(cfg)
    data = load_prepared(corpus_dir, corpora)
    manifests = read_manifests(corpus_dir, corpora)
    mixture = corpus_mixture(manifests, corpora, cfg.data.temperature)
    augment = corpus_augmenter(data, corpora, manifests, tokenizers(cfg), cfg.data.max_len)
    rows = [
        "| data path, one epoch | seconds | batches | padding | target tokens |",
        "|---|---|---|---|---|",
    ]
    for name, augmenter in (("as given", None), ("augmented", augment)):
        start = time.perf_counter()
        order = BatchOrder(data.costs(), data.target_tokens(), cfg.train, DistInfo(), mixture, augmenter)
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
    config = Path(argv[0])
    try:
        if not any(c.augment.active for c in load_config(config).data.corpora):
            raise Seq2SeqError(f"no corpus of {config} has an augment: block")
        with tempfile.TemporaryDirectory(prefix="augment-cost-") as scratch:
            given = made(config, Path(scratch) / "given", as_given(config), corpus=False)
            augmented = made(config, Path(scratch) / "augmented", [], corpus=True)
            print(pieces_table(given, augmented), end="\n\n")
            print(epoch_table(augmented))
    except Seq2SeqError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
