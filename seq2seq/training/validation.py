"""Validation during training: loss and perplexity, and detokenized sacreBLEU of decoded output (a
translation's) or the share of labels predicted right (a reader's), as `VALID_SCORES` chooses.

Each of those scores says what model it measures; the run's task and its model's family go together
(the config's rules), so the chooser holds scores of any model."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import sacrebleu
import torch

from seq2seq.batching import token_batches
from seq2seq.config import DecodeConfig, Task, TrainConfig
from seq2seq.data.parallel import ParallelData
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.decoding.batched import decode_ids
from seq2seq.decoding.decodable import Decodable
from seq2seq.decoding.settings import SearchSettings, config_search
from seq2seq.device import autocast
from seq2seq.models.build import Model
from seq2seq.models.encoder_only import EncoderOnlyTransformer
from seq2seq.special import PAD
from seq2seq.training.loss import TrainingLoss

ModelT = TypeVar("ModelT", contravariant=True)  # what a score measures


@dataclass
class ValidResult:
    loss: float  # per-token negative log-likelihood (no label smoothing)
    bleu: float | None = None
    bleu_signature: str | None = None
    accuracy: float | None = None  # a reader's: labels (classify) or tags (tag) predicted right, in %
    samples: list[tuple[str, str, str]] = field(default_factory=list)  # (source, reference, hypothesis)
    directions: dict[str, ValidResult] = field(default_factory=dict)  # a multilingual run's, each alone

    @property
    def ppl(self) -> float:
        """The perplexity of `loss` (capped at e^50: a diverged model's loss is no number to exp)."""
        return math.exp(min(self.loss, 50.0))

    def of(self, direction: str) -> ValidResult:
        """The result of one direction ("": the whole result, the mean over directions)."""
        return self.directions[direction] if direction else self


@torch.no_grad()
def validation_loss(
    model: Model,
    data: ParallelData,
    max_tokens: int,
    device: torch.device,
    dtype: torch.dtype | None,
) -> float:
    total, tokens = 0.0, 0
    loss = TrainingLoss(model, label_smoothing=0.0)
    for indices in token_batches(data.costs(), max_tokens):
        batch = data.batch(indices).to(device)
        with autocast(device, dtype):
            total += float(loss(batch.src, batch.tgt_in, batch.tgt_out))
        tokens += batch.num_tgt_tokens
    return total / max(tokens, 1)


@torch.no_grad()
def validation_accuracy(
    model: EncoderOnlyTransformer,
    data: ParallelData,
    max_tokens: int,
    device: torch.device,
    dtype: torch.dtype | None,
) -> float:
    """A reader's share of labels (or first-piece tags) predicted right, in %; PAD targets not counted."""
    right, total = 0, 0
    for indices in token_batches(data.costs(), max_tokens):
        batch = data.batch(indices).to(device)
        with autocast(device, dtype):
            _, predicted = model.best_labels(batch.src)
        scored = batch.tgt_out != PAD
        right += int((predicted == batch.tgt_out)[scored].sum())
        total += int(scored.sum())
    return 100 * right / max(total, 1)


def validation_bleu(
    model: Decodable[Any, Any],
    valid: ValidSet,
    tokenizers: TokenizerPair,
    settings: SearchSettings,
    max_tokens: int,
    device: torch.device,
    dtype: torch.dtype | None,
    subset: int,
    tokenize: str = "13a",
) -> tuple[sacrebleu.metrics.BLEUScore, str, list[str]]:
    """Decode the validation sources (or the first `subset`) and score them against the raw references."""
    count = subset or len(valid.data)
    hyps = decode_ids(model, valid.data.src.sequences(range(count)), settings, max_tokens, device, dtype)
    texts = tokenizers.decode_written([h[0].tokens for h in hyps])
    metric = sacrebleu.metrics.BLEU(tokenize=tokenize)
    score = metric.corpus_score(texts, [valid.ref_lines[:count]])
    return score, str(metric.get_signature()), texts


def bleu_scores(
    model: Decodable[Any, Any],
    valid: ValidSet,
    tokenizers: TokenizerPair,
    cfg: TrainConfig,
    decode: DecodeConfig,
    device: torch.device,
    dtype: torch.dtype | None,
    result: ValidResult,
) -> None:
    """A translation's: the BLEU of the decoded sources (with `train.valid_bleu`) and a few samples."""
    if not cfg.valid_bleu:
        return
    settings = dataclasses.replace(config_search(decode), beam=cfg.valid_beam)
    score, signature, texts = validation_bleu(
        model,
        valid,
        tokenizers,
        settings,
        cfg.max_tokens,
        device,
        dtype,
        cfg.valid_subset,
        cfg.valid_bleu_tokenize,
    )
    result.bleu, result.bleu_signature = score.score, signature
    result.samples = [
        (valid.src_lines[i], valid.ref_lines[i], texts[i]) for i in range(min(cfg.valid_samples, len(texts)))
    ]


def accuracy_scores(
    model: EncoderOnlyTransformer,
    valid: ValidSet,
    tokenizers: TokenizerPair,
    cfg: TrainConfig,
    decode: DecodeConfig,
    device: torch.device,
    dtype: torch.dtype | None,
    result: ValidResult,
) -> None:
    """A reader's: the share of labels (or tags) it predicts right."""
    result.accuracy = validation_accuracy(model, valid.data, cfg.max_tokens, device, dtype)


class Scores(Protocol[ModelT]):
    """What validation measures besides the loss, written into `result`."""

    def __call__(
        self,
        model: ModelT,
        valid: ValidSet,
        tokenizers: TokenizerPair,
        cfg: TrainConfig,
        decode: DecodeConfig,
        device: torch.device,
        dtype: torch.dtype | None,
        result: ValidResult,
    ) -> None: ...


# what validation scores besides the loss, by the run's task (`ValidSet.scores`)
VALID_SCORES: dict[Task, Scores[Any]] = {
    Task.TRANSLATE: bleu_scores,
    Task.CLASSIFY: accuracy_scores,
    Task.TAG: accuracy_scores,
}


@dataclass
class ValidSet:
    """Tokenized validation pairs plus the raw lines BLEU is computed against, and what is scored."""

    data: ParallelData
    src_lines: list[str]
    ref_lines: list[str]
    direction: str = ""  # a multilingual run's (de-en); its sources start with the language token
    scores: Scores[Any] = bleu_scores  # what is scored besides the loss: `VALID_SCORES` of the run's task


def validate(
    model: Model,
    valid: ValidSet,
    tokenizers: TokenizerPair,
    cfg: TrainConfig,
    decode: DecodeConfig,
    device: torch.device,
    dtype: torch.dtype | None,
) -> ValidResult:
    was_training = model.training
    model.eval()
    result = ValidResult(loss=validation_loss(model, valid.data, cfg.max_tokens, device, dtype))
    valid.scores(model, valid, tokenizers, cfg, decode, device, dtype, result)
    model.train(was_training)
    return result


def validate_sets(
    model: Model,
    sets: Sequence[ValidSet],
    tokenizers: TokenizerPair,
    cfg: TrainConfig,
    decode: DecodeConfig,
    device: torch.device,
    dtype: torch.dtype | None,
) -> ValidResult:
    """`validate` on a bilingual run's one set; on a multilingual run's, each direction alone and
    their mean (loss and BLEU, every direction counting the same whatever its size), each direction's
    own result in `directions` and its first sample translation in `samples`."""
    if len(sets) == 1 and not sets[0].direction:
        return validate(model, sets[0], tokenizers, cfg, decode, device, dtype)
    each = {v.direction: validate(model, v, tokenizers, cfg, decode, device, dtype) for v in sets}
    bleus = [r.bleu for r in each.values() if r.bleu is not None]
    return ValidResult(
        loss=sum(r.loss for r in each.values()) / len(each),
        bleu=sum(bleus) / len(bleus) if len(bleus) == len(each) else None,
        bleu_signature=next(iter(each.values())).bleu_signature,
        samples=[sample for r in each.values() for sample in r.samples[:1]],
        directions=each,
    )
