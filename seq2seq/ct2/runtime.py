"""Translate with a CTranslate2 export (`s2s export`): the same lines in, lines out as `Translator`.

CTranslate2 decodes under s2s's constraints (`decoding.search`): never <pad> or <bos>, no </s> before
`min_len` tokens, each sentence's own length limit (a * |src| + b, capped by the positions), the
probabilities renormalized over what is allowed. Its beam search divides a score by steps ** alpha
(a chosen </s> is a step), s2s's `power` rule, and stops by the rule s2s's search follows
(`decoding.beam_rule`, the run's `decode.patience` passed on), so a run with that rule gets the same
n-best and the same scores from both engines wherever the two compute the same probabilities
(tested: `tests/unit/ct2/test_same_search.py`, `tests/unit/decoding/test_golden_search.py`). A run
with the `gnmt` rule is searched under CTranslate2's rule and the hypotheses it returns re-ranked by
GNMT's (CTranslate2 has no other, and returns at most round(beam x patience) of them): `--engine
auto` decodes such a run with s2s's decoder.

Threads: on a CPU, one batch per core at once, one thread each (`inter_threads`), as s2s decodes; the
benchmark's grid (`python -m benchmarks --sections engines`) found this the fastest arrangement.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seq2seq.config import Config
from seq2seq.cpu import cpu_has_int8_dot_products, usable_cores
from seq2seq.ct2.export_dir import (
    check_export_files,
    full_range_int8,
    read_export_info,
    require_ctranslate2,
    vocabulary,
)
from seq2seq.ct2.shortlist import VMAP_FILE
from seq2seq.data.tokenizer import TokenizerPair, load_tokenizers
from seq2seq.decoding.answers import ANSWERS
from seq2seq.decoding.hypothesis import Hypothesis, length_normalizer
from seq2seq.decoding.length_limits import output_limits_of_counts
from seq2seq.decoding.settings import SearchSettings
from seq2seq.errors import RunDirError
from seq2seq.special import BOS, EOS, PAD
from seq2seq.translate.attention import AttentionMap
from seq2seq.translate.front import LineFrontEnd
from seq2seq.translate.lines import Translation, file_stamps
from seq2seq.translate.options import RUN_DEFAULTS, DecodeOptions, DecodeOverrides, decode_options
from seq2seq.translate.placement import AUTO, Placement
from seq2seq.translate.request import Request
from seq2seq.translate.source_tokens import SourceTokens

log = logging.getLogger(__name__)

# A server's decode calls on a CPU, one thread a call, stay within this many beam-expanded source
# tokens (about 6 Multi30k lines at beam 5): there, a larger call decodes a line no faster, and a
# short request waits for the call in flight to end. The serve benchmark's mixed load (short
# requests beside 8-line ones, docs/decoding.md) measured a short request's p99 at 1.6-2.3x its p99
# alone with 512, 2.4x with 768, 3.0x with 1,024, 3.3x with 256, and 4.3-5.6x without a limit.
CPU_CALL_TOKENS = 512


@dataclass(frozen=True)
class Threads:
    """How CTranslate2 spreads decoding over CPU cores."""

    inter: int  # batches decoded at once
    intra: int  # threads per batch


def default_threads(cores: int = 0) -> Threads:
    """One batch per core, one thread each (`cores`: 0 = every core the process may use, as torch
    counts them: `seq2seq.cpu.usable_cores`)."""
    return Threads(cores or usable_cores(), 1)


class CT2Translator:
    """A CTranslate2 model with the run's tokenizers."""

    def __init__(
        self, engine: Any, tokenizers: TokenizerPair, config: Config, info: dict[str, Any], export_dir: Path
    ) -> None:
        self.engine, self.tokenizers, self.config, self.info = engine, tokenizers, config, info
        self.export_dir = export_dir
        self.task = config.model.task  # an export translates: `s2s export` writes encoder-decoders only
        self.answers = ANSWERS[self.task]  # what a server may ask of it, as of a run's `Translator`
        pieces = vocabulary(tokenizers.tgt_tokenizer)  # the target vocabulary as the export wrote it
        self._ids = {piece: i for i, piece in enumerate(pieces)}
        self._forbidden = [[pieces[PAD]], [pieces[BOS]]]  # what s2s's search never emits
        self._end = pieces[EOS]
        self.source_tokens = SourceTokens(tokenizers.src, config)  # put before every source
        self.front = LineFrontEnd(tokenizers, self.source_tokens, config.model.max_positions - 1)
        self.calls_at_once = 1  # decode calls that keep its workers busy together (`load`: inter_threads)
        self.call_tokens: int | None = None  # on a CPU, CPU_CALL_TOKENS (`load`)
        # what a server reports of the weights, as of a run's `Translator`
        self.checkpoints = [Path(info.get("checkpoint", export_dir / "model.bin"))]
        self.device, self.dtype, self.quantize = engine.device, None, engine.compute_type
        # an export with a shortlist (`s2s export --shortlist`) scores only each batch's candidates:
        # as its record says (`check_export_files` found the file there)
        self.shortlist = info.get("shortlist") is not None

    @classmethod
    def load(
        cls,
        export_dir: Path,
        placement: Placement = AUTO,
        threads: Threads | None = None,
        files_checked: bool = False,
    ) -> CT2Translator:
        """`placement.quantize` (e.g. int8) converts the weights at load time; None keeps the exported
        type. CTranslate2 picks its own precision, so `placement.precision` is not used.

        `threads`: None = `default_threads(placement.threads)` on a CPU, one batch at a time on a GPU.
        `files_checked`: the caller has just checked the files' sums (the export cache's
        `open_entry`), so they are not read twice.
        """
        ctranslate2 = require_ctranslate2()
        info, config = read_export_info(Path(export_dir))
        if not files_checked:
            check_export_files(Path(export_dir), info)
        tokenizers = load_tokenizers(Path(export_dir) / "tokenizer", config.tokenizer.joint)
        device = placement.device
        device = "cuda" if device == "auto" and ctranslate2.get_cuda_device_count() else device
        device = "cpu" if device == "auto" else device
        if threads is None:
            threads = default_threads(placement.threads) if device == "cpu" else Threads(1, 1)
        try:
            engine = ctranslate2.Translator(
                str(export_dir),
                device=device.split(":")[0],
                device_index=int(device.split(":")[1]) if ":" in device else 0,
                compute_type=placement.quantize or "default",
                inter_threads=threads.inter,
                intra_threads=threads.intra,
            )
        except (RuntimeError, ValueError) as e:
            raise RunDirError(f"CTranslate2 cannot load {export_dir}: {e}") from None
        if device == "cpu" and full_range_int8(info, placement.quantize) and not cpu_has_int8_dot_products():
            log.warning(
                "this CPU has no VNNI (AVX2 only): CTranslate2's int8 sums overflow with 8-bit weights, and "
                "translations drift from the model's (76% of lines as fp32's, against 90% with 7 bits); "
                "export with `s2s export RUN_DIR OUT_DIR --quantize int8` (7-bit weights) and translate that "
                "without --quantize"
            )
        translator = cls(engine, tokenizers, config, info, Path(export_dir))
        translator.calls_at_once = threads.inter
        translator.call_tokens = CPU_CALL_TOKENS if device == "cpu" and threads.intra == 1 else None
        if translator.shortlist:
            log.info(
                "decoding with the export's shortlist (%s): only each batch's candidates are scored",
                VMAP_FILE,
            )
        return translator

    def identity(self) -> dict[str, object]:
        """The export's weights and how CTranslate2 runs them, as `Translator.identity`: the files by
        the sha256 its `s2s.json` records (checked when it was loaded), so that the same export made
        again (a cache cleared, then used) is the same; by size and time only where an export made
        before s2s recorded sums names none."""
        sums = self.info.get("files")
        weights = (
            {name: sha for name, sha in sums.items() if name.endswith(".bin") or name == VMAP_FILE}
            if isinstance(sums, dict) and sums
            else file_stamps(sorted([*self.export_dir.glob("*.bin"), *self.export_dir.glob(VMAP_FILE)]))
        )
        return {
            "weights": weights,
            "device": self.engine.device,
            "compute_type": self.engine.compute_type,
            "shortlist": self.shortlist,
        }

    def describe(self) -> dict[str, object]:
        """CTranslate2, where it runs, its compute type and whether it decodes with a shortlist."""
        return {
            "engine": "ctranslate2",
            "device": self.engine.device,
            "precision": self.engine.compute_type,
            "quantize": self.quantize,
            "shortlist": self.shortlist,
            "export": str(self.export_dir),
        }

    @property
    def max_source_tokens(self) -> int:
        return self.front.max_source_tokens

    def options(self, asked: DecodeOverrides = RUN_DEFAULTS) -> DecodeOptions:
        """The export's decode config with what the command line asks on top (`decode_options`)."""
        return decode_options(asked, self.config.decode, self.config.model.max_positions)

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` per input line, in order (`LineTranslator.translate`, through the line
        front end). Without `request.scores` greedy search and sampling skip CTranslate2's log-softmax
        (their scores are NaN): what `s2s translate` does unless --scores or --nbest asks for them."""
        return self.front.translate(self, lines, request, first_line, prefixes)

    def search_ids(
        self,
        sources: list[list[int]],
        settings: SearchSettings,
        max_tokens: int,
        scores: bool,
        prefixes: list[list[int]] | None,
    ) -> list[list[Hypothesis]]:
        """CTranslate2's search (`front.Search`) of source ids: `search` of their pieces."""
        pieces = [self.tokenizers.src.id_pieces(ids) for ids in sources]
        tgt = self.tokenizers.tgt_tokenizer
        forced = None if prefixes is None else [tgt.id_pieces(prefix) for prefix in prefixes]
        return self.search(pieces, settings, max_tokens, scores, forced)

    def attention_map(self, source: str, hypothesis: str, request: Request) -> AttentionMap:
        """Cross-attention of the run's alignment heads (the mean of the last decoder layer's heads, or
        a guided run's trained head: `s2s export` makes them CTranslate2's alignment layer and heads),
        teacher-forced on `hypothesis`, as `attention_map` gives it for a run: the source with its
        control tokens, then </s>; the target pieces, then </s>."""
        src_tok, tgt_tok = self.tokenizers.src, self.tokenizers.tgt_tokenizer
        start = src_tok.id_pieces(self.source_tokens.prefix(request.direction))
        src = [*start, *src_tok.pieces(source)][: self.max_source_tokens]
        tgt = tgt_tok.pieces(hypothesis)[: self.config.model.max_positions - 1]
        result = self.engine.translate_batch(
            [src],
            target_prefix=[tgt] if tgt else None,
            beam_size=1,
            max_decoding_length=len(tgt) + 1,  # one step after the prefix: the row of its </s>
            return_attention=True,
            return_end_token=True,
            max_input_length=0,
        )[0]
        weights = np.asarray(result.attention[0][: len(tgt) + 1], dtype=np.float32)  # (T, S - 1)
        # CTranslate2 leaves out the column of the </s> it added to the source; each row summed to 1
        end = np.maximum(1 - weights.sum(1, keepdims=True), 0)  # (T, 1)
        return AttentionMap([*src, "</s>"], [*tgt, "</s>"], np.concatenate([weights, end], 1))

    def search(
        self,
        sources: list[list[str]],
        settings: SearchSettings,
        max_tokens: int,
        scores: bool = True,
        prefixes: list[list[str]] | None = None,
    ) -> list[list[Hypothesis]]:
        """The n-best hypotheses (target ids) of each source (its pieces, without </s>), best first,
        as `decoding.search` gives them for the same sources, scored by the run's rule; each starts
        with its `prefixes` pieces when given (empty for none).

        CTranslate2 takes one length limit per call: the sources are decoded in one call per limit,
        all submitted at once, so that its threads work on several calls together.
        """
        # each source's longest output as s2s's search allows it, </s> counted on both sides; with a
        # prefix, long enough for the prefix and a </s>
        forced = None if prefixes is None else [len(p) for p in prefixes]
        counts = [len(s) + 1 for s in sources]
        limits = output_limits_of_counts(counts, settings, self.config.model.max_positions, forced)
        if settings.sampling and settings.seed is not None:
            require_ctranslate2().set_random_seed(settings.seed)
        options = self._options(settings, max_tokens, scores)
        if prefixes is not None and any(prefixes):  # a shortlist would leave out a prefix's own words
            options["use_vmap"] = False
        pending = []
        # a call with target prefixes treats the first step after each (empty ones too) apart
        # (`beam_rule.Beams._after_prefix`): sentences without one are decoded in calls without
        calls = [(limit, bool(prefixes and prefixes[i])) for i, limit in enumerate(limits)]
        for limit, prefixed in sorted(set(calls)):
            rows = [i for i, call in enumerate(calls) if call == (limit, prefixed)]
            results = self.engine.translate_batch(
                [sources[i] for i in rows],
                target_prefix=[prefixes[i] for i in rows] if prefixes and prefixed else None,
                **options,
                max_decoding_length=limit - 1,  # s2s counts the </s> in its limit; CTranslate2 does not
                asynchronous=True,
            )
            pending.append((rows, results, limit - 1))
        found: list[list[Hypothesis]] = [[] for _ in sources]
        for rows, results, most in pending:
            for i, result in zip(rows, results, strict=True):
                found[i] = self._hypotheses(result.result(), settings, most)
        return found

    def _hypotheses(self, result: Any, settings: SearchSettings, most: int) -> list[Hypothesis]:
        """One result's n-best as s2s's hypotheses: target ids, scored by the run's rule.

        CTranslate2's score is the sum of the (renormalized) log-probabilities, </s> included when
        the hypothesis ended by choice, over steps ** alpha, the steps counting that </s>: s2s's `power`
        rule. A hypothesis of `most` tokens (the call's `max_decoding_length`) was cut there, with no
        </s>. Under `gnmt` the n-best is re-ranked. Greedy search is asked for the plain sum (`_alpha`).
        """
        alpha = self._alpha(settings)
        hyps = []
        for pieces, score in zip(
            result.hypotheses, result.scores or [math.nan] * len(result.hypotheses), strict=True
        ):
            chose_end = len(pieces) < most
            total = score * (len(pieces) + chose_end) ** alpha
            normalizer = length_normalizer(len(pieces), settings, chose_end)
            hyps.append(Hypothesis([self._ids[p] for p in pieces], total / normalizer))
        if settings.length_norm != "power":
            hyps.sort(key=lambda h: -h.score)
        return hyps[: settings.nbest]

    @staticmethod
    def _alpha(settings: SearchSettings) -> float:
        """The length penalty CTranslate2 is given: none for greedy search and sampling, whose tokens do
        not depend on it, so that their scores are plain sums, normalized here by the run's rule."""
        return settings.length_penalty if settings.beam > 1 else 0.0

    def _options(self, settings: SearchSettings, max_tokens: int, scores: bool) -> dict[str, Any]:
        """translate_batch's options for s2s's search `settings` (all but the length limit)."""
        rerank = settings.length_norm != "power" and settings.beam > 1
        return {
            "max_batch_size": max(max_tokens // settings.beam, 1),
            "batch_type": "tokens",
            "beam_size": settings.beam,
            "patience": settings.patience,
            "num_hypotheses": settings.finished_wanted if rerank else settings.nbest,
            "length_penalty": self._alpha(settings),
            "min_decoding_length": settings.min_len,
            "no_repeat_ngram_size": settings.no_repeat_ngram,
            "suppress_sequences": self._forbidden,
            "end_token": self._end,
            "max_input_length": 0,  # sources are clipped to the positions already (`clip_sources`)
            "return_scores": scores or settings.beam > 1,  # beam search computes them anyway
            "sampling_topk": (settings.top_k or 0) if settings.sampling else 1,
            "sampling_topp": settings.top_p,
            "sampling_temperature": settings.temperature,
            "use_vmap": self.shortlist,
        }
