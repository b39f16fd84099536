"""Which CTranslate2 export the cache keeps for a run: chosen once, on a sample of its validation set,
against s2s's own decoder (the reference: the run's checkpoint in float32 at the run's decode
settings).

int8 weights (7 or 8 bits, as this CPU sums int8 products: `seq2seq.cpu.cpu_has_int8_dot_products`)
unless they score more than `Choice.int8_loss` BLEU below the reference on the sample; then, where the
run's `decode.shortlist` asks for one (off by default: a shortlist is the union of a batch's
candidates, so a line's translation would depend on its batch), a lexical shortlist (`ct2.shortlist`,
counted from the run's prepared training pairs where it still has them),
kept unless it loses more than `Choice.shortlist_loss` BLEU on top of that, still counted from the
reference. A float32 export more than `Choice.export_loss` below the reference does not reproduce the
run (a search or a weight that CTranslate2 runs otherwise): the record says so, and `--engine auto`
decodes with s2s's decoder instead (`not_used`). A run whose validation files cannot be read gets int8
without a shortlist, recorded as not checked.

The sample is the first `Choice.sample_lines` lines of the run's (first) validation set, decoded as
the run's `decode` config says, scored as its validation scores (`train.valid_bleu_tokenize`).

What a first use costs: 6.4 s for configs/multi30k_de_en.yaml trained for 12 minutes (3+3 layers,
d_model 256, 6,000 joint pieces, beam 5), on 2 cores of an AMD EPYC (Zen 4), 2026-12-06 (4.1-5.1 s
on an Intel Xeon with AMX on 2026-12-04, before the reference was decoded too: the 200 lines three
times with CTranslate2 3.1 s, counting the shortlist over 29,000 pairs 1.0 s, loading and three
exports 0.3 s); a later use finds the entry in 0.02-0.07 s. Remade by this, whose log line says the
time:

    S2S_CACHE_DIR=$(mktemp -d) python -c 'import logging, seq2seq.ct2.export_cache as c
    logging.basicConfig(level=logging.INFO); c.cached_export("RUN_DIR")'
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sacrebleu

from seq2seq.config import Config
from seq2seq.ct2.cache_key import FLOAT32, INT8, RULES, Choice
from seq2seq.ct2.conversion import load_for_export, run_shortlist, write_export
from seq2seq.ct2.runtime import CT2Translator
from seq2seq.ct2.shortlist import Shortlist, ShortlistSize
from seq2seq.errors import Seq2SeqError
from seq2seq.translate.direction import Direction
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from seq2seq.translate.weights import RunWeights


@dataclass(frozen=True)
class Chosen:
    """The export kept (a directory in the scratch space it was made in) and why."""

    directory: Path
    compute_type: str  # INT8 or FLOAT32
    shortlist: bool
    decisions: dict[str, Any]


@dataclass(frozen=True)
class ValSample:
    """The first lines of a run's validation set, and the language its sources are translated into."""

    sources: list[str]
    references: list[str]
    to: str  # a multilingual run's target language; "" for a bilingual run
    tokenize: str  # sacreBLEU's tokenizer, as the run validates
    files: tuple[str, str]


def choose_export(
    run_dir: Path, checkpoint: str, scratch: Path, full_range_int8: bool, choice: Choice = RULES
) -> Chosen:
    """Export the run's `checkpoint` into `scratch` as each candidate, and return the one `choice` keeps
    (`full_range_int8`: int8 weights in 8 bits, not 7, where this CPU sums int8 products in int32)."""
    start = time.monotonic()
    exports = Candidates(load_for_export(run_dir, checkpoint), run_dir, scratch, full_range_int8)
    sample = val_sample(exports.weights.config, choice.sample_lines)
    if isinstance(sample, str):
        unchecked = {"val": f"not checked: {sample}", "compute_type": INT8, "shortlist": None}
        return Chosen(exports.write(INT8), INT8, False, unchecked | {"seconds": since(start)})
    made = {kind: exports.write(kind) for kind in (INT8, FLOAT32)}
    bleu = {"reference": reference_bleu(exports.weights, sample)}
    bleu |= {kind: sample_bleu(directory, kind, sample) for kind, directory in made.items()}
    allowed = bleu["reference"] - choice.int8_loss  # the lowest score the export kept may have
    compute_type = INT8 if bleu[INT8] >= allowed else FLOAT32
    allowed = allowed if compute_type == INT8 else bleu["reference"]
    directory, shortlist = made[compute_type], None
    tried = (
        exports.shortlisted(compute_type, choice.shortlist)
        if exports.weights.config.decode.shortlist
        else "not tried: decode.shortlist is false (a line's translation would depend on its batch)"
    )
    if isinstance(tried, Path):
        bleu["shortlist"] = sample_bleu(tried, compute_type, sample)
        if bleu["shortlist"] >= allowed - choice.shortlist_loss:
            directory, shortlist = tried, dataclasses.asdict(choice.shortlist)
    # why `--engine auto` leaves the export aside, or None
    not_used = export_gap(bleu[FLOAT32], "in float32", bleu["reference"], len(sample.sources), choice)
    decisions: dict[str, Any] = {
        "val": {"src": sample.files[0], "tgt": sample.files[1], "lines": len(sample.sources)},
        "reference": "s2s's decoder, float32, the run's decode settings",
        "bleu": {name: round(score, 2) for name, score in bleu.items()},
        "not_used": not_used,
        "compute_type": compute_type,
        "shortlist": shortlist,
        "shortlist_tried": dataclasses.asdict(choice.shortlist) if isinstance(tried, Path) else tried,
        "seconds": since(start),
    }
    return Chosen(directory, compute_type, shortlist is not None, decisions)


def reference_gap(weights: RunWeights, export_dir: Path, choice: Choice = RULES) -> str | None:
    """What `s2s export` warns of: the export of `weights` at `export_dir`, as written, scores more
    than `choice.export_loss` BLEU below s2s's decoder over the same weights on the run's val sample;
    None when it does not, or when the run has no val to tell."""
    sample = val_sample(weights.config, choice.sample_lines)
    if isinstance(sample, str):
        return None
    found, reference = sample_bleu(export_dir, None, sample), reference_bleu(weights, sample)
    return export_gap(found, "as written", reference, len(sample.sources), choice)


def export_gap(found: float, how: str, reference: float, lines: int, choice: Choice) -> str | None:
    """Why an export scoring `found` BLEU (loaded `how`) does not reproduce its run, whose s2s decoder
    scores `reference` on the same `lines` val lines; None within `choice.export_loss`."""
    if found >= reference - choice.export_loss:
        return None
    return (
        f"its CTranslate2 export scores BLEU {found:.2f} {how} on {lines} val lines, s2s's decoder "
        f"{reference:.2f}: more than {choice.export_loss:g} apart, CTranslate2 does not reproduce this "
        "run's translations"
    )


def since(start: float) -> float:
    return round(time.monotonic() - start, 1)


@dataclass(frozen=True)
class Candidates:
    """The exports of one checkpoint, loaded once (`load_for_export`), written into `scratch`."""

    weights: RunWeights
    run_dir: Path
    scratch: Path
    full_range_int8: bool

    def write(self, compute_type: str, shortlist: tuple[ShortlistSize, Shortlist] | None = None) -> Path:
        """The export to load with `compute_type` (INT8: int8 weights; FLOAT32: float32 ones)."""
        out = self.scratch / (compute_type + ("-shortlist" if shortlist else ""))
        quantize = INT8 if compute_type == INT8 else None
        write_export(self.weights, self.run_dir, out, quantize, self.full_range_int8, shortlist)
        return out

    def shortlisted(self, compute_type: str, size: ShortlistSize) -> Path | str:
        """`write(compute_type)` with a shortlist of `size`, or why there is none (no prepared pairs)."""
        try:
            lexicon = run_shortlist(self.run_dir, self.weights.config, self.weights.tokenizers, size)
        except Seq2SeqError as e:  # the run's prepared pairs are gone or changed: no shortlist, no error
            return f"not tried: {e}"
        return self.write(compute_type, (size, lexicon))


def val_sample(cfg: Config, lines: int) -> ValSample | str:
    """The first `lines` pairs of the run's first validation set, or why there are none."""
    sets = cfg.data.validation_sets()
    if not sets or not sets[0].src or not sets[0].tgt:
        return "no val: the run's config names no validation files"
    valid = sets[0]
    try:
        sources, references = head(Path(valid.src), lines), head(Path(valid.tgt), lines)
    except (OSError, UnicodeDecodeError) as e:
        return f"no val: {e}"
    count = min(len(sources), len(references))
    if count == 0:
        return f"no val: {valid.src} or {valid.tgt} is empty"
    tokenize = cfg.train.valid_bleu_tokenize
    return ValSample(sources[:count], references[:count], valid.tgt_lang, tokenize, (valid.src, valid.tgt))


def head(path: Path, lines: int) -> list[str]:
    """The first `lines` lines of a UTF-8 text file, without their line ends."""
    with path.open(encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\r\n") for line in itertools.islice(f, lines)]


def sample_bleu(export_dir: Path, compute_type: str | None, sample: ValSample) -> float:
    """BLEU of the export's translations of the sample, tokenized as the run's validation tokenizes."""
    hypotheses = sample_translations(export_dir, compute_type, sample)
    return float(sacrebleu.corpus_bleu(hypotheses, [sample.references], tokenize=sample.tokenize).score)


def reference_bleu(weights: RunWeights, sample: ValSample) -> float:
    """BLEU of s2s's own decoder over `weights` (float32, on the CPU) on the sample, at the run's
    decode settings."""
    translator = Translator.of_weights(weights)
    request = Request.of(translator.options(), Direction(sample.to), scores=False)
    hypotheses = [found.texts[0] for found in translator.translate(sample.sources, request)]
    return float(sacrebleu.corpus_bleu(hypotheses, [sample.references], tokenize=sample.tokenize).score)


def sample_translations(export_dir: Path, compute_type: str | None, sample: ValSample) -> list[str]:
    """The export's best translation of each sample source, decoded as its run's `decode` config says
    (the one place the cache decodes)."""
    translator = CT2Translator.load(export_dir, Placement("cpu", "fp32", compute_type))
    found = translator.translate(
        sample.sources, Request.of(translator.options(), Direction(sample.to), scores=False)
    )
    return [translation.texts[0] for translation in found]
