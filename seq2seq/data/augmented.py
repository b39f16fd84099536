"""An epoch's modified pairs: which pairs are modified, their token counts, and batches that hold them.

Augmentation is decided where an epoch's examples are known and before they are batched
(`seq2seq.training.order.BatchOrder`), so a modified pair is batched by its own length: batches keep
to train.max_tokens and each step's target-token count is true. The prepared corpus stays the base:
a chosen pair's ids are decoded with the run's tokenizer, modified (`seq2seq.data.augment`) and
encoded again, once when the epoch is planned (its lengths) and again when its batch is made (its
ids, the same since every choice comes from the pair's key), so memory holds no epoch's ids. A pair
chosen for `subword` is encoded with sampled segmentations (`seq2seq.data.subword`), drawn from its
key too.

Whether and how a pair is modified depends on the seed, the epoch, its corpus's name, its number in
that corpus and, for a pair drawn several times in an epoch (a weight above 1), which copy it is:
never on the rank or on the batches before it. Every rank plans the same epoch, takes its own share
of it, and a resumed run makes the same modified pairs again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from seq2seq.config.augment import AugmentConfig
from seq2seq.config.data import CorpusConfig
from seq2seq.data.augment import MODIFIERS, SUBWORD, choose, corpus_key, mixed_keys, modify_pair
from seq2seq.data.parallel import Batch, JoinedCorpus, ParallelData, merged
from seq2seq.data.subword import Sampler, sampled_pair, subword_sampler
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.special import UNK

log = logging.getLogger(__name__)

Corpus = ParallelData | JoinedCorpus


class Codec(Protocol):
    """Text <-> ids of one side (`seq2seq.data.tokenizer.Tokenizer`)."""

    def encode(self, lines: Sequence[str], threads: int = -1) -> list[list[int]]: ...

    def decode(self, ids: Sequence[Sequence[int]], keep_unk: bool = False) -> list[str]: ...


@dataclass(frozen=True)
class CorpusPart:
    """One corpus of the training data: where its pairs are, how they are modified, what starts its
    sources (control ids, put back in front of a modified source)."""

    name: str
    start: int  # its first pair, numbered over all corpora
    size: int
    augment: AugmentConfig
    prefix: tuple[int, ...] = ()


class Augmenter:
    """Modifies the pairs of `data` as each corpus's `augment` says, within `max_len` tokens a side;
    `samplers` (source, target) draw the segmentations of the pairs chosen for `subword`."""

    def __init__(
        self,
        data: Corpus,
        parts: Sequence[CorpusPart],
        src: Codec,
        tgt: Codec,
        max_len: int,
        samplers: tuple[Sampler, Sampler] | None = None,
    ) -> None:
        self.data, self.parts, self.src, self.tgt, self.max_len = data, list(parts), src, tgt, max_len
        self.samplers = samplers

    def describe(self) -> str:
        """`augment train: upper 0.1, typos 0.1` for each corpus that is modified."""
        return "; ".join(f"augment {p.name}: {p.augment.describe()}" for p in self.parts if p.augment.active)

    def epoch(
        self, seed: int, epoch: int, drawn: np.ndarray | None, costs: np.ndarray, targets: np.ndarray
    ) -> EpochVariants:
        """The examples of an epoch (`drawn`, or every pair once), modified ones in place of their pairs;
        `costs` and `targets` are the corpus's (`Corpus.costs`, `Corpus.target_tokens`)."""
        examples = np.arange(len(self.data), dtype=np.int64) if drawn is None else drawn.astype(np.int64)
        copies = _copy_numbers(examples) if drawn is not None else np.zeros(len(examples), np.int64)
        keys, flags = np.zeros(len(examples), np.uint64), np.zeros(len(examples), np.uint8)
        for part in self.parts:
            if part.augment.active:
                where = np.flatnonzero((examples >= part.start) & (examples < part.start + part.size))
                pairs = examples[where] - part.start
                keys[where] = mixed_keys(seed, epoch, corpus_key(part.name), pairs, copies[where])
                flags[where] = choose(keys[where], part.augment)
        chosen = np.flatnonzero(flags)
        src, tgt, kept = self._modified(examples[chosen], keys[chosen], flags[chosen])
        chosen = chosen[kept]
        counts = ", ".join(
            f"{name} {np.count_nonzero(flags[chosen] & bit):,}" for name, bit in MODIFIERS.items()
        )
        log.info(
            "epoch %d: %s of %s examples modified (%s)",
            epoch,
            f"{len(chosen):,}",
            f"{len(examples):,}",
            counts,
        )
        variants = ParallelData.from_lists(src, tgt, self.data.targets)
        epoch_costs, epoch_targets = costs[examples], targets[examples]
        epoch_costs[chosen], epoch_targets[chosen] = variants.costs(), variants.target_tokens()
        modified = examples.copy()
        modified[chosen] = len(self.data) + np.arange(len(chosen))
        return EpochVariants(
            self, modified, epoch_costs, epoch_targets, examples[chosen], keys[chosen], flags[chosen]
        )

    def variant_ids(
        self, pairs: np.ndarray, keys: np.ndarray, flags: np.ndarray
    ) -> tuple[list[list[int]], list[list[int]]]:
        """The ids of pairs `pairs` modified by `flags` with `keys`, as `epoch` planned them."""
        src, tgt, kept = self._modified(pairs, keys, flags)
        assert len(src) == len(pairs), "a planned variant is no longer made"  # the keys decide all
        return src, tgt

    def _modified(
        self, pairs: np.ndarray, keys: np.ndarray, flags: np.ndarray
    ) -> tuple[list[list[int]], list[list[int]], np.ndarray]:
        """(source ids, target ids) of the modified pairs that are kept, and which are (A,) bool.

        A pair is left as it is where it holds an `<unk>` (its text is not known), where the change
        leaves its ids as they were, empties a side or makes one longer than `max_len` tokens.
        """
        src_ids, tgt_ids = self.data.pairs(pairs)
        corpora = [self._part(int(pair)) for pair in pairs]
        prefixes = [part.prefix for part in corpora]
        texts = zip(
            self.src.decode([s[len(p) :] for s, p in zip(src_ids, prefixes, strict=True)]),
            self.tgt.decode(tgt_ids),
            strict=True,
        )
        new = [modify_pair(s, t, int(f), int(k)) for (s, t), f, k in zip(texts, flags, keys, strict=True)]
        encoded, new_tgt = self._encoded(new, keys, flags, [part.augment.subword_alpha for part in corpora])
        new_src = [[*p, *ids] for p, ids in zip(prefixes, encoded, strict=True)]
        kept = np.array(
            [
                UNK not in s and UNK not in t and (ns != s or nt != t) and _fits(ns, len(p), nt, self.max_len)
                for s, t, ns, nt, p in zip(src_ids, tgt_ids, new_src, new_tgt, prefixes, strict=True)
            ],
            dtype=bool,
        )
        keep = np.flatnonzero(kept)
        return [new_src[i] for i in keep], [new_tgt[i] for i in keep], kept

    def _encoded(
        self, texts: list[tuple[str, str]], keys: np.ndarray, flags: np.ndarray, alphas: list[float]
    ) -> tuple[list[list[int]], list[list[int]]]:
        """(source ids, target ids) of each pair of `texts`: segmented as usual, or at random as its
        key draws (`sampled_pair`) where its flags hold `subword`, with its corpus's alpha."""
        src, tgt = self.src.encode([s for s, _ in texts]), self.tgt.encode([t for _, t in texts])
        for i in np.flatnonzero(flags & SUBWORD):
            assert self.samplers is not None, "a corpus samples segmentations: corpus_augmenter makes them"
            src[i], tgt[i] = sampled_pair(*self.samplers, texts[i], int(keys[i]), alphas[i])
        return src, tgt

    def _part(self, pair: int) -> CorpusPart:
        return next(p for p in self.parts if p.start <= pair < p.start + p.size)


def _fits(src: list[int], prefix: int, tgt: list[int], max_len: int) -> bool:
    """Whether a modified pair has text on both sides, each at most `max_len` tokens (as prepared)."""
    return 0 < len(src) - prefix <= max_len and 0 < len(tgt) <= max_len


def _copy_numbers(examples: np.ndarray) -> np.ndarray:
    """(M,) which copy of its pair each example is (0 for the first in `examples`, 1 for the next...)."""
    order = np.argsort(examples, kind="stable")
    ordered = examples[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # where each pair's run begins
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(ordered)]))
    copies = np.empty(len(examples), np.int64)
    copies[order] = np.arange(len(ordered)) - run_start
    return copies


@dataclass(frozen=True)
class EpochVariants:
    """One epoch's examples with their modified pairs: example `N + j` (N pairs in the corpus) is the
    j-th modified pair, pair `pairs[j]` with the modifiers `flags[j]` drawn by `keys[j]`."""

    augmenter: Augmenter
    examples: np.ndarray  # (M,) int64: the epoch's examples, in the order of the draw
    costs: np.ndarray  # (M,) their padded lengths (a modified pair's own)
    targets: np.ndarray  # (M,) their real target tokens
    pairs: np.ndarray  # (A,) the pair each modified example comes from
    keys: np.ndarray  # (A,) uint64
    flags: np.ndarray  # (A,) uint8

    def batch(self, rows: Sequence[int] | np.ndarray) -> Batch:
        """The examples `rows` (pairs and modified pairs), in that order, as one padded batch."""
        data = self.augmenter.data
        rows = np.asarray(rows, dtype=np.int64)
        modified = rows >= len(data)
        if not modified.any():
            return data.batch(rows)
        pieces = []
        if not modified.all():
            as_given = np.flatnonzero(~modified)
            pieces.append((as_given, data.batch(rows[as_given])))
        where = np.flatnonzero(modified)
        j = rows[where] - len(data)
        src, tgt = self.augmenter.variant_ids(self.pairs[j], self.keys[j], self.flags[j])
        pieces.append((where, ParallelData.from_lists(src, tgt, data.targets).batch(np.arange(len(j)))))
        return merged(len(rows), pieces)


def corpus_augmenter(
    data: Corpus,
    corpora: Sequence[CorpusConfig],
    manifests: dict[str, dict[str, Any]],
    tokenizers: TokenizerPair,
    max_len: int,
) -> Augmenter | None:
    """What modifies the prepared `corpora` (`data`, numbered corpus after corpus, as `manifests`
    count them) while training; None when none is modified."""
    if not any(corpus.augment.active for corpus in corpora):
        return None
    sizes = [int(manifests[corpus.name]["pairs"]) for corpus in corpora]
    starts = np.cumsum([0, *sizes[:-1]])
    parts = [
        CorpusPart(c.name, int(start), size, c.augment, tuple(manifests[c.name]["made_from"]["prefix"]))
        for c, start, size in zip(corpora, starts, sizes, strict=True)
    ]
    samplers = None
    if any(corpus.augment.subword for corpus in corpora):
        src = subword_sampler(tokenizers.src)
        samplers = (src, src if tokenizers.joint else subword_sampler(tokenizers.tgt_tokenizer))
    return Augmenter(data, parts, tokenizers.src, tokenizers.tgt_tokenizer, max_len, samplers)
