"""Which engine decodes: the one place that chooses, for translate, evaluate and serve alike.

`--engine auto` (the default) takes the fastest engine that can run the request. On a CPU that is
CTranslate2 (about twice s2s's own decoder in int8: README, Benchmarks) over an export made on first
use into the export cache (`seq2seq.ct2.export_cache`), when the run's family and every option asked are
supported there and the export reproduces s2s's decoder on val (its record's `not_used`, said in a
warning); else s2s's own decoder, which stays the reference and the engine of what CTranslate2
cannot run (ensembles, readers, families the export does not hold, s2s's --precision, beam search
ranked by GNMT's rule). On a GPU it
keeps s2s's decoder until the GPU check has measured both engines there. One log line says which and
why. `--engine s2s|ctranslate2` forces one; forcing one that cannot run the request is an error.

The chosen engine is handed down as a value (`Chosen`): nothing below asks which engine it holds.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from seq2seq.config import Config
from seq2seq.ct2.export_dir import EXPORT_INFO, ctranslate2_broken, ctranslate2_missing, read_export_info
from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_outputs
from seq2seq.models.family import export_refusal
from seq2seq.run.layout import RunDir
from seq2seq.run.parts import reranker_inputs, run_inputs
from seq2seq.translate import resume
from seq2seq.translate.engine import Engine
from seq2seq.translate.options import DecodeOptions, DecodeOverrides, decode_options, rerank_weight_of
from seq2seq.translate.placement import Placement, check_device_name, check_precision_name

if TYPE_CHECKING:
    from seq2seq.translate.translator import Translator

log = logging.getLogger(__name__)

ENGINES = ("auto", "s2s", "ctranslate2")


@dataclass(frozen=True)
class Chosen:
    """The engine a command decodes with, the options asked of it, and why it was chosen."""

    engine: Engine
    options: DecodeOptions
    name: str  # s2s or ctranslate2: what records and messages say
    reason: str
    own: Translator | None = None  # s2s's decoder, when it decodes: what continuous batching joins


def choose_engine(
    path: Path,
    engine: str,
    asked: DecodeOverrides,
    placement: Placement,
    input: Path | None = None,
    outputs: Mapping[str, Path | None] | None = None,
) -> Chosen:
    """The engine `engine` (auto, s2s, ctranslate2) names for PATH (a run, or an export of one) and
    the options asked of it, once no output (named as the command line names it) is known to replace
    an input: nothing is loaded or exported before."""
    outputs = outputs or {}
    is_export = (Path(path) / EXPORT_INFO).is_file()
    _check_asked(engine, placement, is_export)
    if is_export:
        return _from_export(path, engine, asked, placement, input, outputs)
    cfg = RunDir(path).load_config()  # a wrong path fails here, saying so
    options = decode_options(asked, cfg.decode, cfg.model.max_positions)
    judges, configs = reranker_inputs(asked.rerank, cfg)
    check_outputs(outputs, {"-i/--input": input, **run_inputs(path, options.checkpoints), **judges})
    asked = rerank_weight_of(asked, configs)  # the --rerank runs are there: their default weights
    options = decode_options(asked, cfg.decode, cfg.model.max_positions)
    if engine == "s2s":
        return _own(path, options, placement, "asked for (--engine s2s)")
    why_not = _cannot(options, cfg)
    if engine == "auto" and (broken := ctranslate2_broken()) is not None:
        log.warning("%s", broken)  # said without -v: the fast engine is not there
    if why_not is None and engine == "auto":
        why_not = _prefers_own(placement)
    if why_not is not None:
        if engine == "ctranslate2":
            raise Seq2SeqError(f"--engine ctranslate2 cannot run this: {why_not}; leave --engine out")
        return _own(path, options, placement, why_not)
    return _from_cache(path, engine, asked, options, placement, outputs)


def _from_export(
    path: Path,
    engine: str,
    asked: DecodeOverrides,
    placement: Placement,
    input: Path | None,
    outputs: Mapping[str, Path | None],
) -> Chosen:
    """CTranslate2 over PATH, a directory `s2s export` made."""
    if engine == "s2s":
        raise Seq2SeqError(
            f"{path} is a CTranslate2 export (`s2s export`): s2s's decoder reads a run directory; "
            "give the run, or leave --engine out"
        )
    if asked.checkpoints:
        raise Seq2SeqError("--checkpoint picks weights in a run; an export holds one set: leave it out")
    # the whole export is read (CTranslate2 loads a directory): nothing may be written into it
    forward = read_export_info(path)[1] if asked.rerank else None  # only a reranker needs it
    judges, configs = reranker_inputs(asked.rerank, forward)
    check_outputs(outputs, {"-i/--input": input, "the export": path, **judges})
    return _ctranslate2(path, rerank_weight_of(asked, configs), placement, "an export directory")


def _from_cache(
    path: Path,
    engine: str,
    asked: DecodeOverrides,
    options: DecodeOptions,
    placement: Placement,
    outputs: Mapping[str, Path | None],
) -> Chosen:
    """CTranslate2 over the export cache's entry for the run at PATH, where the cache can be used
    and the export reproduces s2s's decoder; else, under `auto`, s2s's decoder, saying why in one
    line."""
    from seq2seq.ct2.export_cache import CacheUnavailable, cached_export

    try:
        cached = cached_export(Path(path), options.checkpoints[0])
    except CacheUnavailable as e:
        if engine == "ctranslate2":
            raise
        log.warning("decoding with s2s's decoder: %s", e)  # said without -v: the fast engine is not there
        return _own(path, options, placement, f"{e}; s2s's decoder instead")
    check_outputs(outputs, {"the export": cached.path})
    if cached.not_used is not None:
        if engine == "auto":
            log.warning("decoding with s2s's decoder: %s (the record: %s)", cached.not_used, cached.record)
            return _own(path, options, placement, cached.not_used)
        log.warning("%s; --engine ctranslate2 decodes with it as asked", cached.not_used)
    ct2_placement = dataclasses.replace(
        placement, precision="fp32", quantize=placement.quantize or cached.compute_type
    )
    why = "asked for (--engine ctranslate2)" if engine == "ctranslate2" else "CTranslate2 runs all asked"
    return _ctranslate2(cached.path, asked, ct2_placement, why, files_checked=True)


def _check_asked(engine: str, placement: Placement, is_export: bool) -> None:
    """The engine and placement named, checked as every engine checks them, before either is used:
    CTranslate2 (asked for, or an export) takes no --precision; its compute type is --quantize."""
    if engine not in ENGINES:
        raise Seq2SeqError(f"--engine {engine!r}: choose one of {', '.join(ENGINES)}")
    check_device_name(placement.device)
    check_precision_name(placement.precision)
    if (engine == "ctranslate2" or is_export) and placement.precision != "auto":
        raise Seq2SeqError(
            f"--precision {placement.precision} chooses how s2s's decoder runs; CTranslate2 does not take "
            "it: give its compute type with --quantize (int8, float32, ...), or use --engine s2s"
        )


def auto_engine_here(placement: Placement) -> str:
    """What `auto` takes on this machine for a run CTranslate2 can decode (`s2s --version`)."""
    if (missing := ctranslate2_missing()) is not None:
        return f"s2s ({missing})"
    why_not = _prefers_own(placement)
    if why_not is not None:
        return f"s2s ({why_not})"
    return "ctranslate2 for an encoder-decoder run (s2s for readers, ensembles, --precision, --quantize)"


def resumed_choice(engine: str, placement: Placement, resumed: Path | None) -> tuple[str, Placement]:
    """The engine and placement to ask for: for an output being resumed (`resumed`), what its first
    command chose where this one leaves the choice to `auto`, not chosen again halfway (on another
    machine, perhaps): the engine, so that a file never mixes two; s2s's precision."""
    if resumed is None:
        return engine, placement
    if engine == "auto":
        engine = resume.recorded_engine(resumed) or engine
    if engine == "s2s" and placement.precision == "auto" and placement.quantize is None:
        placement = dataclasses.replace(placement, precision=resume.recorded_precision(resumed) or "auto")
    return engine, placement


def _cannot(options: DecodeOptions, cfg: Config) -> str | None:
    """Why CTranslate2 cannot run what is asked of a run of config `cfg`, or None when it can."""
    if (missing := ctranslate2_missing()) is not None:
        return missing
    if len(options.checkpoints) > 1:
        return "an ensemble of several checkpoints decodes with s2s's decoder only"
    if options.search.length_norm != "power" and options.search.beam > 1:
        return (
            f"beam search under --length-norm {options.search.length_norm}: CTranslate2 ranks by the power "
            "rule, so its n-best is not s2s's"
        )
    return export_refusal(cfg.model)


def _prefers_own(placement: Placement) -> str | None:
    """Why `auto` keeps s2s's decoder though CTranslate2 could run the request, or None."""
    if placement.precision != "auto" or placement.quantize is not None:
        return (
            "--precision and --quantize choose how s2s's decoder runs (with --engine ctranslate2, "
            "--quantize is CTranslate2's compute type)"
        )
    if placement.device == "cpu":
        return None
    import ctranslate2  # asked, not torch: the CPU path never imports torch

    if placement.device.startswith("cuda") or ctranslate2.get_cuda_device_count():
        return "on a GPU s2s's decoder stays the default until both engines are measured there"
    return None


def _ctranslate2(
    export_dir: Path, asked: DecodeOverrides, placement: Placement, reason: str, files_checked: bool = False
) -> Chosen:
    """CTranslate2 over the export EXPORT_DIR (`files_checked`: by the export cache, just now)."""
    from seq2seq.ct2.runtime import CT2Translator

    translator = CT2Translator.load(export_dir, placement, files_checked=files_checked)
    described = translator.describe()
    shortlist = ", shortlist" if described["shortlist"] else ""
    log.info("engine: ctranslate2 (%s%s): %s", described["precision"], shortlist, reason)
    return Chosen(translator, translator.options(asked), "ctranslate2", reason)


def _own(run_dir: Path, options: DecodeOptions, placement: Placement, reason: str) -> Chosen:
    """s2s's own decoder over RUN_DIR's weights."""
    from seq2seq.translate.translator import Translator

    translator = Translator.load(run_dir, options.checkpoints, placement)
    log.info("engine: s2s: %s", reason)
    return Chosen(translator, options, "s2s", reason, own=translator)
