"""`s2s score`: the model's log-probability of given (source, target) pairs, batched like translation.

Pairs are sorted by length into batches of about `max_tokens` padded tokens and scored in one
teacher-forced pass each (`seq2seq.decoding.forced_scores`); results come back in input order. With a
second, reverse-direction run, the dual conditional cross-entropy of Junczys-Dowmunt (2018):
|H_fwd - H_rev| + (H_fwd + H_rev) / 2, where H is a direction's cross-entropy per target token
(<eos> included); low means both models find the pair likely and agree, what corpus filtering keeps.

Every score printed is a finite number, or a word saying why the pair has none, in each of its
fields: `blank` when a side of the pair is blank (as `s2s translate` scores no blank line, nor a blank
hypothesis; the dual cross-entropy reads the target as the reverse run's source), `short` when the
target is shorter than the run's `decode.min_len` (the search never ends it there: probability 0).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import torch

from seq2seq.batching import pad, token_batches
from seq2seq.config.data import CorpusConfig
from seq2seq.data.corpora import pair_chunks
from seq2seq.decoding.forced_scores import forced_log_probs
from seq2seq.device import autocast
from seq2seq.errors import DataError, Seq2SeqError
from seq2seq.models.encoder_only import EncoderOnlyTransformer
from seq2seq.special import EOS
from seq2seq.translate.direction import STRAIGHT, Direction
from seq2seq.translate.lines import BLANK, clip_sources
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator

log = logging.getLogger(__name__)

SHORT = "short"  # the score field of a target shorter than decode.min_len (BLANK: of a blank pair)


@dataclass(frozen=True)
class PairScore:
    """A pair's target log-probabilities, one per target piece and one for <eos>; or none, and why
    (`missing`: BLANK or SHORT)."""

    tokens: list[float]
    missing: str = ""

    @property
    def total(self) -> float:
        return math.fsum(self.tokens)

    @property
    def cross_entropy(self) -> float:
        """-total / tokens: the per-token cross-entropy (nats)."""
        return -self.total / len(self.tokens)


def score_pairs(
    translator: Translator,
    src_lines: Sequence[str],
    tgt_lines: Sequence[str],
    max_tokens: int,
    first_line: int = 1,
    source_prefix: Sequence[int] | None = None,
) -> list[PairScore]:
    """The score of each (source, target) pair under `translator`'s model, in input order.

    Sources start with the control ids `source_prefix` (a language, a tag; None: those of the run's
    only target language and no tag) as when translating; a source or target over
    the model's positions is cut with a warning naming its line, as `translate` cuts sources. A pair
    with a blank side, or a target shorter than `decode.min_len`, is not scored (`PairScore.missing`).
    """
    tokenizers = translator.tokenizers
    start = translator.source_tokens.prefix() if source_prefix is None else source_prefix
    sources = [[*start, *ids] for ids in tokenizers.src.encode(list(src_lines))]
    targets = tokenizers.encode_written(list(tgt_lines))
    lines = range(first_line, first_line + len(sources))
    clip_sources(sources, translator.max_source_tokens, lines, "scoring")
    clip_sources(targets, translator.max_source_tokens, lines, "scoring")  # <bos> + target fits
    min_len = translator.config.decode.min_len
    missing = [
        BLANK if not (src.strip() and tgt.strip()) else SHORT if len(ids) < min_len else ""
        for src, tgt, ids in zip(src_lines, tgt_lines, targets, strict=True)
    ]
    todo = [i for i, why in enumerate(missing) if not why]
    found = iter(score_ids(translator, [sources[i] for i in todo], [targets[i] for i in todo], max_tokens))
    return [PairScore([], why) if why else next(found) for why in missing]


def score_ids(
    translator: Translator,
    sources: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
    max_tokens: int,
) -> list[PairScore]:
    """`score_pairs` of token ids (without <eos>/<bos>, each short enough for the model)."""
    model = translator.model
    assert not isinstance(model, EncoderOnlyTransformer), "a reader writes no target to score"
    costs = [max(len(s), len(t)) + 1 for s, t in zip(sources, targets, strict=True)]
    found: dict[int, PairScore] = {}  # by pair index
    min_len = translator.config.decode.min_len
    for batch in token_batches(costs, max_tokens):
        distinct = {tuple(sources[i]): None for i in batch}  # a line's hypotheses share it: encoded once
        where = {source: k for k, source in enumerate(distinct)}
        src = pad([[*source, EOS] for source in distinct]).to(translator.device)
        of = torch.tensor([where[tuple(sources[i])] for i in batch])
        with autocast(translator.device, translator.autocast_to):
            logp = forced_log_probs(model, src, [targets[i] for i in batch], min_len, of)
        for row, i in zip(logp.cpu().tolist(), batch, strict=True):
            found[i] = PairScore(row[: len(targets[i]) + 1])
    return [found[i] for i in range(len(sources))]


def dual_cross_entropy(forward: PairScore, reverse: PairScore) -> float:
    """Junczys-Dowmunt (2018): |H_fwd - H_rev| + (H_fwd + H_rev) / 2 (lower is better)."""
    h_fwd, h_rev = forward.cross_entropy, reverse.cross_entropy
    return abs(h_fwd - h_rev) + (h_fwd + h_rev) / 2


def missing(forward: PairScore, reverse: PairScore | None) -> str:
    """Why the pair has no score (BLANK, SHORT), in either direction; "" when it has one."""
    return forward.missing or (reverse.missing if reverse is not None else "")


def format_score(forward: PairScore, reverse: PairScore | None, with_tokens: bool) -> str:
    """One output line: `log-prob<TAB>log-prob per token[<TAB>token scores]`, or with a reverse run
    `dual cross-entropy<TAB>H_fwd<TAB>H_rev`; a pair without a score has why in each field."""
    if why := missing(forward, reverse):
        return "\t".join([why] * (3 if reverse is not None else 2 + with_tokens)) + "\n"
    if reverse is not None:
        fields = [dual_cross_entropy(forward, reverse), forward.cross_entropy, reverse.cross_entropy]
        return "\t".join(f"{x:.4f}" for x in fields) + "\n"
    line = f"{forward.total:.4f}\t{-forward.cross_entropy:.4f}"
    if with_tokens:
        line += "\t" + " ".join(f"{x:.4f}" for x in forward.tokens)
    return line + "\n"


@dataclass(frozen=True)
class Scorer:
    """What `s2s score` scores with: a run, optionally one of the reverse direction, a batch budget."""

    forward: Translator
    backward: Translator | None
    max_tokens: int
    forward_prefix: tuple[int, ...] | None = None  # the control ids each run's sources start with
    backward_prefix: tuple[int, ...] | None = None

    def pairs(
        self, src: Sequence[str], tgt: Sequence[str], first_line: int
    ) -> list[tuple[PairScore, PairScore | None]]:
        """Each pair's forward score, and its reverse one (target -> source) when there is a reverse run."""
        forward = score_pairs(self.forward, src, tgt, self.max_tokens, first_line, self.forward_prefix)
        if self.backward is None:
            return [(f, None) for f in forward]
        backward = score_pairs(self.backward, tgt, src, self.max_tokens, first_line, self.backward_prefix)
        return list(zip(forward, backward, strict=True))

    def rerank(self, src: Sequence[str], nbest: Sequence[str], first_line: int, where: str) -> list[str]:
        """`translate --nbest` lines re-ranked: each line's hypotheses, best first, with their new
        score (the per-token log-probability, or minus the dual cross-entropy with a reverse run);
        hypotheses without a score last, in their order, with why (`missing`)."""
        lists = [_hypotheses(line, where, first_line + i) for i, line in enumerate(nbest)]
        flat_src = [s for s, hyps in zip(src, lists, strict=True) for _ in hyps]
        scored = iter(self.pairs(flat_src, [h for hyps in lists for h in hyps], first_line))
        out = []
        for hyps in lists:
            pairs = [next(scored) for _ in hyps]
            order = sorted(range(len(hyps)), key=lambda i: _rank(*pairs[i]))
            out.append("\t".join(f"{hyps[i]}\t{_shown(*pairs[i])}" for i in order) + "\n")
        return out


def _value(forward: PairScore, reverse: PairScore | None) -> float:
    """Higher is better: the per-token log-probability, or minus the dual cross-entropy."""
    return -forward.cross_entropy if reverse is None else -dual_cross_entropy(forward, reverse)


def _rank(forward: PairScore, reverse: PairScore | None) -> tuple[bool, float]:
    """Best first, and a pair without a score after every scored one."""
    why = missing(forward, reverse)
    return bool(why), 0.0 if why else -_value(forward, reverse)


def _shown(forward: PairScore, reverse: PairScore | None) -> str:
    """A re-ranked hypothesis' score, or why it has none."""
    return missing(forward, reverse) or f"{_value(forward, reverse):.4f}"


def _hypotheses(line: str, where: str, number: int) -> list[str]:
    fields = line.split("\t")
    if len(fields) % 2:
        raise DataError(
            f"{where}: line {number} is not `s2s translate --nbest` output (hypothesis<TAB>score, repeated)"
        )
    return fields[0::2]


def load_scorer(
    run_dir: Path,
    reverse_dir: Path | None,
    checkpoints: tuple[str, ...],
    placement: Placement,
    max_tokens: int | None,
    direction: Direction = STRAIGHT,
    reverse: Direction = STRAIGHT,
) -> Scorer:
    """The runs `s2s score` scores with: the forward run in `direction` (a multilingual run's target
    language, a tag), the reverse run into `reverse.to`; the reverse run takes no tag (a tag belongs
    to a direction). A run that gives no target a log-probability (a reader's) is refused."""
    if reverse.to and reverse_dir is None:
        raise Seq2SeqError(
            f"--reverse-to {reverse.to} is the target language of a --reverse run: add --reverse RUN, "
            "or leave it out"
        )
    forward = Translator.load(run_dir, checkpoints or ("best",), placement)
    forward_prefix = forward.source_tokens.prefix(direction)
    backward, backward_prefix = None, None
    if reverse_dir is not None:
        backward = Translator.load(reverse_dir, ("best",), placement)
        backward_prefix = backward.source_tokens.prefix(Direction(reverse.to), option="--reverse-to")
    for translator, path in ((forward, run_dir), (backward, reverse_dir)):
        if translator is not None and not translator.answers.scores_targets:
            raise Seq2SeqError(
                f"s2s score gives translations their log-probability; {path} is a {translator.task} "
                "run, which reads its answers: score its predictions with `s2s evaluate`"
            )
    budget = max_tokens or forward.config.decode.max_tokens
    return Scorer(forward, backward, budget, forward_prefix, backward_prefix)


def score_stream(
    scorer: Scorer,
    pairs: CorpusConfig,
    nbest: bool,
    with_tokens: bool,
    sink: IO[str],
    on_chunk: Callable[[int], object],
) -> None:
    """Score `pairs` chunk by chunk into SINK, one line per pair (or re-ranked n-best line), flushed
    after each chunk."""
    done = 0
    for src_lines, tgt_lines in pair_chunks(pairs):
        if nbest:
            sink.writelines(scorer.rerank(src_lines, tgt_lines, done + 1, pairs.tgt))
        else:
            scored = scorer.pairs(src_lines, tgt_lines, done + 1)
            sink.writelines(format_score(f, r, with_tokens) for f, r in scored)
        sink.flush()
        done += len(src_lines)
        on_chunk(len(src_lines))
