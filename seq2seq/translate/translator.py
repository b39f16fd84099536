"""Translate text with a trained run: `Translator.load(run_dir)`, then lines in, lines out."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from seq2seq.config import Config
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.decoding.answers import ANSWERS
from seq2seq.decoding.batched import decode_ids
from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.settings import SearchSettings
from seq2seq.device import auto_cpu_dtype, autocast_dtype, resolve_device
from seq2seq.errors import Seq2SeqError
from seq2seq.models.build import Model
from seq2seq.models.decoder_only import DecoderOnlyTransformer
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.encoder_only import EncoderOnlyTransformer
from seq2seq.models.ensemble import Ensemble
from seq2seq.models.packed import can_pack, pack_linear_layers
from seq2seq.special import BOS, EOS
from seq2seq.translate.attention import AttentionMap
from seq2seq.translate.cross_attention import alignment_heads
from seq2seq.translate.front import LineFrontEnd
from seq2seq.translate.lines import Translation, file_stamps
from seq2seq.translate.options import RUN_DEFAULTS, DecodeOptions, DecodeOverrides, decode_options
from seq2seq.translate.placement import AUTO, Placement
from seq2seq.translate.request import Request
from seq2seq.translate.source_tokens import SourceTokens
from seq2seq.translate.weights import RunWeights, load_weights

log = logging.getLogger(__name__)


def quantize_model(model: Model, kind: str, device: torch.device) -> Model:
    """Dynamic int8 linear layers (weights int8, activations quantized per batch): CPU only.

    On the Multi30k model, beam 5 runs about 1.5x faster for -0.1 BLEU (README benchmarks).
    """
    if kind != "int8":
        raise Seq2SeqError(f"--quantize {kind!r}: the only choice is int8")
    if device.type != "cpu":
        raise Seq2SeqError("--quantize int8 runs on the CPU only; add --device cpu")
    quantize_dynamic = getattr(getattr(torch.ao, "quantization", None), "quantize_dynamic", None)
    if quantize_dynamic is None:
        raise Seq2SeqError(
            "--quantize int8 needs torch.ao.quantization, which this torch build no longer has"
        )
    with warnings.catch_warnings():  # torch announces a move of this API to the torchao package
        warnings.simplefilter("ignore")
        return quantize_dynamic(model.eval(), {nn.Linear}, dtype=torch.qint8)


class Translator:
    """A trained model with its tokenizers, ready to turn source lines into target lines."""

    def __init__(
        self,
        model: Model | Ensemble,
        tokenizers: TokenizerPair,
        config: Config,
        device: torch.device,
        dtype: torch.dtype | None,
        quantize: str | None = None,
        checkpoints: Sequence[Path] = (),
    ) -> None:
        self.model, self.tokenizers, self.config = model.eval(), tokenizers, config
        self.task = config.model.task  # translate, or a reader's classify or tag: what messages name
        self.answers = ANSWERS[self.task]  # searched or read, and what else can be asked: chosen once, here
        self.device, self.dtype = device, dtype
        self.quantize = quantize  # "int8" when the linear layers run in int8
        self.checkpoints = list(checkpoints)  # the files the weights came from
        self.at_once = 0  # batches a CPU decodes together (`decode_ids`): 0 = one per core
        self.weights_cast = False  # the weights are in `dtype` themselves (`cast_weights`), not autocast
        self.source_tokens = SourceTokens(tokenizers.src, config)  # put before every source
        self.front = LineFrontEnd(tokenizers, self.source_tokens, self.model.max_positions - 1)
        self.alignment = alignment_heads(config)  # the cross-attention that shows where it looked
        self.calls_at_once = 1  # its decode calls run one at a time (one thread owns torch's threads)
        self.call_tokens: int | None = None  # larger batches keep paying (the budget decides)

    @classmethod
    def load(
        cls,
        run_dir: str | Path,
        checkpoints: Sequence[str] = ("best",),
        placement: Placement = AUTO,
    ) -> Translator:
        """Everything comes from the run directory: config, tokenizers, weights.

        Each checkpoint must have been trained with this run's model config and tokenizer files;
        several checkpoints decode as an ensemble (their next-token probabilities averaged).
        `placement.threads` sets torch's thread count for the process (0 leaves it as it is).
        """
        if placement.threads:
            torch.set_num_threads(placement.threads)
        torch_device = resolve_device(placement.device)
        dtype = autocast_dtype(torch_device, placement.precision)
        weights = load_weights(run_dir, checkpoints)
        cfg, tokenizers, paths, models = weights.config, weights.tokenizers, weights.paths, []
        for model in weights.models:
            if placement.quantize is not None:
                model, dtype = quantize_model(model, placement.quantize, torch_device), None
            models.append(model.to(torch_device))
        if len(models) > 1 and not ANSWERS[cfg.model.task].averages_ensembles:
            raise Seq2SeqError(
                f"an ensemble of several checkpoints decodes translations, not task {cfg.model.task}"
            )
        one = models[0] if len(models) == 1 else _ensemble(models)
        translator = cls(one, tokenizers, cfg, torch_device, dtype, placement.quantize, paths)
        if torch_device.type == "cpu" and placement.precision == "auto" and placement.quantize is None:
            # from the CPU's features, as training decides: the same on every start on this machine
            translator.dtype, reason = auto_cpu_dtype()
            log.info("precision auto on this CPU: %s", reason)
        if translator.dtype is torch.bfloat16:
            translator.cast_weights()
        return translator

    @classmethod
    def of_weights(cls, weights: RunWeights) -> Translator:
        """s2s's decoder over a run's first model as `load_weights` built it: float32 on the CPU."""
        return cls(
            weights.first,
            weights.tokenizers,
            weights.config,
            torch.device("cpu"),
            None,
            None,
            weights.paths[:1],
        )

    def identity(self) -> dict[str, object]:
        """What decides this translator's numbers besides the search: its weight files (each one's
        size and modification time) and how they run. A resumed `translate` must find the same."""
        return {
            "weights": file_stamps(self.checkpoints),
            "device": str(self.device),
            "dtype": str(self.dtype),
            "quantize": self.quantize,
        }

    def describe(self) -> dict[str, object]:
        """s2s's own decoder, where it runs and at what precision (`Engine.describe`)."""
        return {
            "engine": "s2s",
            "device": str(self.device),
            "precision": str(self.dtype or torch.float32).removeprefix("torch."),
            "quantize": self.quantize,
            "shortlist": False,
        }

    def cast_weights(self) -> None:
        """Keep the weights in bf16 instead of casting them under autocast at every step: half the
        memory, no casts, the same kernels (log-probabilities are still taken in fp32). On a CPU the
        linear layers' weights are also laid out once for oneDNN (`models.packed`)."""
        for model in self.model.models if isinstance(self.model, Ensemble) else [self.model]:
            model.to(self.dtype)
            if can_pack(self.device, self.dtype):
                pack_linear_layers(model)
        self.weights_cast = True

    def decode_ids(
        self,
        sources: Sequence[Sequence[int]],
        settings: SearchSettings,
        max_tokens: int,
        prefixes: Sequence[Sequence[int]] | None = None,
    ) -> list[list[Hypothesis]]:
        """`decoding.batched.decode_ids` of token-id sources with this model, its device and precision."""
        return decode_ids(
            self.model,
            sources,
            settings,
            max_tokens,
            self.device,
            self.autocast_to,
            self.answers,
            self.at_once,
            prefixes,
        )

    @property
    def autocast_to(self) -> torch.dtype | None:
        """The dtype decoding runs under autocast in: none when the weights are cast themselves."""
        return None if self.weights_cast else self.dtype

    @property
    def first_model(self) -> Model:
        """The model (the first of an ensemble): what a report draws attention maps of."""
        return self.model.models[0] if isinstance(self.model, Ensemble) else self.model

    @property
    def max_source_tokens(self) -> int:
        return self.front.max_source_tokens

    def attention_map(self, source: str, hypothesis: str, request: Request) -> AttentionMap:
        """Where the model looks writing `hypothesis` for `source`: the cross-attention of the run's
        alignment heads (`self.alignment`), teacher-forced on `hypothesis`; the source starts with the
        request's control ids (a target language, a tag), as when translated."""
        model = self.first_model  # a translation's, whose answers draw attention: it has a decoder
        assert isinstance(model, Seq2SeqTransformer | DecoderOnlyTransformer)
        src_tok, tgt_tok = self.tokenizers.src, self.tokenizers.tgt_tokenizer
        prefix = self.source_tokens.prefix(request.direction)
        src_ids = [*prefix, *src_tok.encode([source])[0]][: self.max_source_tokens]
        reading = tgt_tok.encode([hypothesis])[0][: model.max_positions - 1]
        tgt_ids = self.tokenizers.targets.in_model_order(reading)  # as the model writes them
        src = torch.tensor([[*src_ids, EOS]], device=self.device)  # (1, S)
        tgt_in = torch.tensor([[BOS, *tgt_ids]], device=self.device)  # (1, T)
        weights = self.alignment.weights(model, src, tgt_in)[0].float().cpu().numpy()  # (T, S)
        # a row per piece in reading order, then </s>'s (a right-to-left model wrote them last first)
        weights = weights[[*self.tokenizers.targets.in_model_order(range(len(tgt_ids))), len(tgt_ids)]]
        source_pieces = [*src_tok.id_pieces(prefix), *src_tok.pieces(source)][: len(src_ids)]
        pieces = source_pieces, tgt_tok.pieces(hypothesis)[: len(tgt_ids)]
        return AttentionMap([*pieces[0], "</s>"], [*pieces[1], "</s>"], weights)

    def options(self, asked: DecodeOverrides = RUN_DEFAULTS) -> DecodeOptions:
        """The run's decode config with what the command line asks on top (`decode_options`)."""
        return decode_options(asked, self.config.decode, self.config.model.max_positions)

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` per input line, in order (`LineTranslator.translate`, through the line
        front end). Every hypothesis is scored whatever `request.scores` says (the search needs the
        scores)."""
        if request.search.nbest > 1 and not self.answers.gives_nbest:
            raise Seq2SeqError(f"--nbest is for translations; a {self.task} run gives one answer per line")
        return self.front.translate(self, lines, request, first_line, prefixes)

    def search_ids(
        self,
        sources: list[list[int]],
        settings: SearchSettings,
        max_tokens: int,
        scores: bool,
        prefixes: list[list[int]] | None,
    ) -> list[list[Hypothesis]]:
        """s2s's search (`front.Search`): `decode_ids`, which scores every hypothesis."""
        return self.decode_ids(sources, settings, max_tokens, prefixes)


def _ensemble(models: Sequence[Model]) -> Ensemble:
    """Several checkpoints' models decoding as one: a translation's, of a family that decodes."""
    members = [model for model in models if not isinstance(model, EncoderOnlyTransformer)]
    assert len(members) == len(models), "a reader's answers are not averaged (`Answers.averages_ensembles`)"
    return Ensemble(members)
