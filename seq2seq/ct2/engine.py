"""Translate with a CTranslate2 export (`s2s export`): the same lines in, lines out as `Translator`.

Greedy search gives the same tokens as s2s's own decoder (tested). Beam search differs in one
documented way: CTranslate2 normalizes a hypothesis' score by length ** length_penalty, where s2s
uses GNMT's ((5 + length) / 6) ** alpha; and its length limit is one per call (from the chunk's
longest source) rather than one per sentence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seq2seq.config import Config, config_from_dict
from seq2seq.ct2.export import EXPORT_INFO, ExportError, require_ctranslate2
from seq2seq.data.tokenizer import TokenizerPair, load_tokenizers
from seq2seq.decoding.search import SearchSettings
from seq2seq.errors import RunDirError
from seq2seq.translate.options import RUN_DEFAULTS, DecodeOptions, DecodeOverrides, decode_options
from seq2seq.translate.placement import AUTO, Placement
from seq2seq.translate.translator import Translation, blank_translations, clip_sources


class CT2Translator:
    """A CTranslate2 model with the run's tokenizers."""

    def __init__(self, engine: Any, tokenizers: TokenizerPair, config: Config, info: dict[str, Any]) -> None:
        self.engine, self.tokenizers, self.config, self.info = engine, tokenizers, config, info
        self.task = config.model.task  # an export translates: `s2s export` writes encoder-decoders only

    @classmethod
    def load(cls, export_dir: Path, placement: Placement = AUTO, threads: int = 0) -> CT2Translator:
        """`placement.quantize` (e.g. int8) converts the weights at load time; None keeps the exported
        type. CTranslate2 picks its own precision, so `placement.precision` is not used.

        `threads` is CTranslate2's threads per translation (0 = its default).
        """
        ctranslate2 = require_ctranslate2()
        info_file = Path(export_dir) / EXPORT_INFO
        if not info_file.is_file():
            raise ExportError(
                f"{export_dir} is not an s2s CTranslate2 export (no {EXPORT_INFO}); make one with "
                "`s2s export RUN_DIR --to ctranslate2 OUT_DIR`"
            )
        info = json.loads(info_file.read_text(encoding="utf-8"))
        config = config_from_dict(info["config"])
        tokenizers = load_tokenizers(Path(export_dir) / "tokenizer", config.tokenizer.joint)
        device = placement.device
        device = "cuda" if device == "auto" and ctranslate2.get_cuda_device_count() else device
        device = "cpu" if device == "auto" else device
        try:
            engine = ctranslate2.Translator(
                str(export_dir),
                device=device.split(":")[0],
                device_index=int(device.split(":")[1]) if ":" in device else 0,
                compute_type=placement.quantize or "default",
                intra_threads=threads,
            )
        except (RuntimeError, ValueError) as e:
            raise RunDirError(f"CTranslate2 cannot load {export_dir}: {e}") from None
        return cls(engine, tokenizers, config, info)

    @property
    def max_source_tokens(self) -> int:
        return self.config.model.max_positions - 1

    def options(self, asked: DecodeOverrides = RUN_DEFAULTS) -> DecodeOptions:
        """The export's decode config with what the command line asks on top (`decode_options`)."""
        return decode_options(asked, self.config.decode)

    def translate(
        self,
        lines: Sequence[str],
        settings: SearchSettings,
        max_tokens: int,
        first_line: int = 1,
        keep_unk: bool = False,
    ) -> list[Translation]:
        """One `Translation` per input line, in order; an empty line gives an empty translation."""
        todo = [i for i, line in enumerate(lines) if line.strip()]
        out = blank_translations(len(lines), settings.nbest)
        if not todo:
            return out
        sources = [self.tokenizers.src.pieces(lines[i]) for i in todo]
        clip_sources(sources, self.max_source_tokens, [first_line + i for i in todo])
        longest = max(map(len, sources)) + 1  # + </s>
        if settings.sampling and settings.seed is not None:
            require_ctranslate2().set_random_seed(settings.seed)
        results = self.engine.translate_batch(
            sources,
            max_batch_size=max(max_tokens // settings.beam, 1),
            batch_type="tokens",
            beam_size=settings.beam,
            num_hypotheses=settings.nbest,
            length_penalty=settings.length_penalty,
            max_decoding_length=self._length_limit(settings, longest),
            min_decoding_length=settings.min_len,
            no_repeat_ngram_size=settings.no_repeat_ngram,
            sampling_topk=(settings.top_k or 0) if settings.sampling else 1,
            sampling_topp=settings.top_p,
            sampling_temperature=settings.temperature,
            return_scores=True,
        )
        sp = self.tokenizers.tgt.sp  # pieces -> ids -> text, exactly as s2s detokenizes
        for i, result in zip(todo, results):
            ids = [[sp.piece_to_id(piece) for piece in hyp] for hyp in result.hypotheses]
            out[i] = Translation(self.tokenizers.tgt.decode(ids, keep_unk), list(result.scores))
        return out

    def _length_limit(self, settings: SearchSettings, source_tokens: int) -> int:
        """s2s's longest output for a source of `source_tokens` (with </s>), in CTranslate2's terms.

        s2s counts the </s> in its limit (`decoding.max_output_lengths`); CTranslate2 does not.
        """
        limit = int(settings.max_len_a * source_tokens + settings.max_len_b)
        return min(max(limit, settings.min_len + 1), self.config.model.max_positions - 1) - 1
