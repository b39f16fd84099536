"""An epoch's modified pairs are batched by their own lengths, shared disjointly by the ranks, made again
the same after a resume, and are the modified text encoded (prefix kept, `<unk>` pairs and pairs that
would grow past data.max_len left as they are)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
import torch

from seq2seq.config import TrainConfig
from seq2seq.config.augment import AugmentConfig
from seq2seq.data.augment import choose, corpus_key, mixed_keys, modify_pair
from seq2seq.data.augmented import Augmenter, CorpusPart
from seq2seq.data.mixing import mixture_of
from seq2seq.data.parallel import JoinedCorpus, ParallelData
from seq2seq.special import EOS, UNK
from seq2seq.training.distributed import DistInfo
from seq2seq.training.order import BatchOrder
from seq2seq.training.state import Progress
from tests.unit.data.test_augment import synthetic_pairs

TAG = 7  # a control id before every source of corpus "a"
SHARES = AugmentConfig(upper=0.2, title=0.1, typos=0.3, nopunct=0.2, noise=0.05)
MAX_LEN = 90


class Chars:
    """A tokenizer with one id per character (its code point), ids 0-3 reserved."""

    def encode(self, lines: Sequence[str], threads: int = -1) -> list[list[int]]:
        return [[ord(c) for c in line] for line in lines]

    def decode(self, ids: Sequence[Sequence[int]], keep_unk: bool = False) -> list[str]:
        return ["".join(chr(i) for i in seq if i > EOS) for seq in ids]


def corpus() -> tuple[JoinedCorpus, Augmenter]:
    """Corpus a (300 pairs, tagged) and corpus b (200 pairs, one with an <unk>), both modified."""
    codec, parts, pieces = Chars(), [], []
    for name, count, prefix in (("a", 300, (TAG,)), ("b", 200, ())):
        src, tgt = zip(*synthetic_pairs(count, seed=len(name) + count), strict=True)
        ids = [[*prefix, *s] for s in codec.encode(src)]
        tgt_ids = codec.encode(tgt)
        if name == "b":
            ids[0] = [*ids[0][:3], UNK, *ids[0][3:]]
        pieces.append(ParallelData.from_lists(ids, tgt_ids))
        parts.append(CorpusPart(name, 300 if name == "b" else 0, count, SHARES, prefix))
    data = JoinedCorpus.of(pieces)
    return data, Augmenter(data, parts, codec, codec, MAX_LEN)


MIXTURE = mixture_of("ab", (300, 200), (1.0, 2.0))  # b's pairs twice an epoch


def orders(world: int, cfg: TrainConfig) -> tuple[JoinedCorpus, list[BatchOrder]]:
    data, augment = corpus()
    made = [
        BatchOrder(data.costs(), data.target_tokens(), cfg, DistInfo(rank, world), MIXTURE, augment)
        for rank in range(world)
    ]
    return data, made


@pytest.mark.parametrize("world", [1, 2])
def test_batches_keep_the_budget_and_steps_count_the_modified_targets(world):
    cfg = TrainConfig(max_tokens=600, accum_steps=2, seed=3)
    data, ranks = orders(world, cfg)
    positions = [Progress() for _ in range(world)]
    while positions[0].epoch < 2:
        steps = [order.next_step(at) for order, at in zip(ranks, positions, strict=True)]
        built = [b for step in steps for b in step.build(data)]
        assert all(b.src.shape[0] * max(b.src.shape[1], b.tgt_in.shape[1]) <= 600 for b in built)
        assert [s.total_tokens for s in steps] == [sum(b.num_tgt_tokens for b in built)] * world


def test_ranks_share_each_epoch_disjointly_and_modified_copies_differ():
    cfg = TrainConfig(max_tokens=600, seed=3)
    data, ranks = orders(2, cfg)
    variants = ranks[0].next_step(Progress(epoch=1)).variants
    assert variants is not None and len(variants.pairs) > 100
    taken = Counter(int(i) for order in ranks for batch in order.batches(1) for i in batch)
    assert taken == Counter(variants.examples.tolist())  # every example once, on one rank
    as_pairs = [i if i < len(data) else int(variants.pairs[i - len(data)]) for i in taken.elements()]
    assert Counter(as_pairs) == Counter(MIXTURE.draw(cfg.seed, 1).tolist())
    assert len(set(variants.keys.tolist())) == len(variants.keys)  # a pair's two copies differ


def test_a_resumed_order_makes_the_same_modified_batches():
    cfg = TrainConfig(max_tokens=600, accum_steps=2, seed=5)
    data, (order,) = orders(1, cfg)
    at = Progress()
    whole = [order.next_step(at).build(data) for _ in range(12)]
    stopped, (first,) = Progress(), orders(1, cfg)[1]
    for _ in range(7):
        first.next_step(stopped)
    _, (fresh,) = orders(1, cfg)  # a new process at step 7
    later = [fresh.next_step(stopped).build(data) for _ in range(5)]
    for a, b in zip(whole[7:], later, strict=True):
        assert all(
            torch.equal(x.src, y.src) and torch.equal(x.tgt_out, y.tgt_out) for x, y in zip(a, b, strict=True)
        )
    modified = [i for batch in fresh.batches(0) for i in batch if i >= len(data)]
    assert len(modified) > 100  # the batches compared hold modified pairs


def test_a_modified_pair_is_its_modified_text_encoded_after_the_corpus_prefix():
    data, augment = corpus()
    variants = augment.epoch(1, 0, None, data.costs(), data.target_tokens())
    codec, n = Chars(), len(data)
    for j in range(0, len(variants.pairs), 7):
        pair = int(variants.pairs[j])
        src, tgt = data.pairs([pair])
        prefix = [TAG] if pair < 300 else []
        new_src, new_tgt = modify_pair(
            *codec.decode([src[0][len(prefix) :], tgt[0]]), int(variants.flags[j]), int(variants.keys[j])
        )
        batch = variants.batch([n + j])
        assert batch.src[0].tolist() == [*prefix, *codec.encode([new_src])[0], EOS]
        assert batch.tgt_out[0].tolist() == [*codec.encode([new_tgt])[0], EOS]
        assert 0 < len(new_src) <= MAX_LEN and 0 < len(new_tgt) <= MAX_LEN
    assert np.all(variants.costs <= MAX_LEN + 2)
    # b's first pair holds an <unk> (its text is not known): never modified, in an epoch that chooses it
    chosen = next(e for e in range(50) if choose(mixed_keys(1, e, corpus_key("b"), 0, 0), SHARES)[0])
    assert 300 not in augment.epoch(1, chosen, None, data.costs(), data.target_tokens()).pairs.tolist()
