"""Translate with a CTranslate2 export (`s2s export`): the same lines in, lines out as `Translator`.

CTranslate2 decodes under s2s's constraints (`decoding.search`): never <pad> or <bos>, no </s> before
`min_len` tokens, each sentence's own length limit (a * |src| + b, capped by the positions). Greedy
search (and sampling) then gives s2s's tokens wherever the model's choice is clear, scored as s2s
scores them: the model's log-probabilities, </s> included, over GNMT's length penalty (tested on an
under-trained model). Beam search differs in its scores: CTranslate2 normalizes a hypothesis' score
by length ** length_penalty, where s2s uses GNMT's ((5 + length) / 6) ** alpha, and renormalizes the
probabilities after removing the forbidden tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from seq2seq.config import Config
from seq2seq.ct2.export import read_export_info, require_ctranslate2, vocabulary
from seq2seq.data.tokenizer import TokenizerPair, load_tokenizers
from seq2seq.decoding.search import Hypothesis, SearchSettings, length_penalty, max_output_lengths
from seq2seq.errors import RunDirError
from seq2seq.special import BOS, EOS, PAD
from seq2seq.translate.options import RUN_DEFAULTS, DecodeOptions, DecodeOverrides, decode_options
from seq2seq.translate.placement import AUTO, Placement
from seq2seq.translate.translator import Translation, blank_translations, clip_sources


class CT2Translator:
    """A CTranslate2 model with the run's tokenizers."""

    def __init__(self, engine: Any, tokenizers: TokenizerPair, config: Config, info: dict[str, Any]) -> None:
        self.engine, self.tokenizers, self.config, self.info = engine, tokenizers, config, info
        self.task = config.model.task  # an export translates: `s2s export` writes encoder-decoders only
        pieces = vocabulary(tokenizers.tgt)  # the target vocabulary as the export wrote it
        self._ids = {piece: i for i, piece in enumerate(pieces)}
        self._forbidden = [[pieces[PAD]], [pieces[BOS]]]  # what s2s's search never emits
        self._end = pieces[EOS]

    @classmethod
    def load(cls, export_dir: Path, placement: Placement = AUTO, threads: int = 0) -> CT2Translator:
        """`placement.quantize` (e.g. int8) converts the weights at load time; None keeps the exported
        type. CTranslate2 picks its own precision, so `placement.precision` is not used.

        `threads` is CTranslate2's threads per translation (0 = its default).
        """
        ctranslate2 = require_ctranslate2()
        info, config = read_export_info(Path(export_dir))
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
        for i, nbest in zip(todo, self.search(sources, settings, max_tokens)):
            texts = self.tokenizers.tgt.decode([h.tokens for h in nbest], keep_unk)
            out[i] = Translation(texts, [h.score for h in nbest])
        return out

    def search(
        self, sources: list[list[str]], settings: SearchSettings, max_tokens: int
    ) -> list[list[Hypothesis]]:
        """The n-best hypotheses (target ids) of each source (its pieces, without </s>), best first,
        as `decoding.search` gives them for the same sources."""
        limits = self.length_limits(settings, [len(s) + 1 for s in sources])  # + </s>
        if settings.sampling and settings.seed is not None:
            require_ctranslate2().set_random_seed(settings.seed)
        if settings.beam == 1 and settings.nbest == 1:  # where s2s searches greedily (`search.search`)
            found = self._greedy(sources, limits, settings, max_tokens)
        else:
            found = self._beam(sources, limits, settings, max_tokens)
        return [
            [Hypothesis([self._ids[piece] for piece in hyp], score) for hyp, score in zip(*nbest)]
            for nbest in found
        ]

    def length_limits(self, settings: SearchSettings, source_tokens: Sequence[int]) -> list[int]:
        """s2s's longest output (</s> included) for sources of `source_tokens` tokens (</s> included):
        `decoding.max_output_lengths`, the same arithmetic."""
        lengths = torch.tensor(source_tokens)
        src = (torch.arange(int(lengths.max()))[None, :] < lengths[:, None]).long() * EOS  # (B, S), 0 = PAD
        return max_output_lengths(src, settings, self.config.model.max_positions).tolist()

    def _options(self, settings: SearchSettings, max_tokens: int) -> dict[str, Any]:
        """translate_batch's options for s2s's search `settings` (all but the length limit)."""
        return {
            "max_batch_size": max(max_tokens // settings.beam, 1),
            "batch_type": "tokens",
            "beam_size": settings.beam,
            "num_hypotheses": settings.nbest,
            "length_penalty": settings.length_penalty,
            "min_decoding_length": settings.min_len,
            "no_repeat_ngram_size": settings.no_repeat_ngram,
            "suppress_sequences": self._forbidden,
            "end_token": self._end,
            "max_input_length": 0,  # sources are clipped to the positions already (`clip_sources`)
            "sampling_topk": (settings.top_k or 0) if settings.sampling else 1,
            "sampling_topp": settings.top_p,
            "sampling_temperature": settings.temperature,
        }

    def _greedy(
        self, sources: list[list[str]], limits: list[int], settings: SearchSettings, max_tokens: int
    ) -> list[tuple[list[list[str]], list[float]]]:
        """Greedy (or sampled) pieces and s2s's score of each source, in one call to CTranslate2.

        A greedy prefix does not depend on the length limit, so every sentence is decoded to the
        longest limit and cut at its own, where s2s allows only </s>. Then each output is scored by the
        model (`score_batch`): CTranslate2's own scores renormalize the probabilities after removing
        the forbidden tokens, s2s's do not.
        """
        results = self.engine.translate_batch(
            sources,
            **self._options(settings, max_tokens),
            max_decoding_length=max(limits) - 1,
            return_end_token=True,
        )
        outputs = []
        for result, limit in zip(results, limits):
            pieces = result.hypotheses[0]
            if pieces and pieces[-1] == self._end:
                pieces = pieces[:-1]
            outputs.append(pieces[: limit - 1])
        scored = self.engine.score_batch(
            sources, outputs, max_batch_size=max_tokens, batch_type="tokens", max_input_length=0
        )
        alpha = settings.length_penalty
        return [
            ([pieces], [sum(s.log_probs) / length_penalty(len(s.log_probs), alpha)])
            for pieces, s in zip(outputs, scored)
        ]

    def _beam(
        self, sources: list[list[str]], limits: list[int], settings: SearchSettings, max_tokens: int
    ) -> list[tuple[list[list[str]], list[float]]]:
        """The n-best pieces and CTranslate2's scores of each source, one call per length limit (a beam
        search is cut short by its limit; CTranslate2 takes one limit per call)."""
        out: list[tuple[list[list[str]], list[float]]] = [([], [])] * len(sources)
        for limit in sorted(set(limits)):
            rows = [i for i, row_limit in enumerate(limits) if row_limit == limit]
            results = self.engine.translate_batch(
                [sources[i] for i in rows],
                **self._options(settings, max_tokens),
                max_decoding_length=limit - 1,  # s2s counts the </s> in its limit; CTranslate2 does not
                return_scores=True,
            )
            for i, result in zip(rows, results):
                out[i] = (list(result.hypotheses), list(result.scores))
        return out
