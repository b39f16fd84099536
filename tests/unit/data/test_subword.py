"""Subword regularization: s2s samples segmentations as SentencePiece does (BPE-dropout with nothing
dropped is SentencePiece's encoding, a sharp unigram sample scores as its best one, and both draw as
many pieces as SentencePiece's own samplers), a pair's sample is a function of its key alone (whatever
was sampled before), other epochs draw others, each decodes to the pair's text, and a share of 0
leaves the prepared ids as they are."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest
import sentencepiece as spm
import torch

from seq2seq.config import TrainConfig
from seq2seq.config.augment import AugmentConfig
from seq2seq.data.augment import SUBWORD, corpus_key, mixed_keys
from seq2seq.data.augmented import Augmenter, CorpusPart
from seq2seq.data.parallel import Batch, ParallelData
from seq2seq.data.subword import BPE, UNIGRAM, model_spec, sampled_pair, subword_sampler
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import DataError
from seq2seq.special import BOS, EOS, PAD, UNK
from seq2seq.training.distributed import DistInfo
from seq2seq.training.order import BatchOrder
from seq2seq.training.state import Progress
from tests.conftest import write_corpus

PAIRS = 200
UNSEEN = ["red Übersetzung 猫猫 cat", "ÄÖ  blue½ dog"]  # characters the tiny corpus never has
KINDS = {  # (model type, byte fallback): alpha (unigram: smoothing; bpe: dropout)
    ("unigram", False): 0.1,
    ("unigram", True): 0.1,
    ("bpe", False): 0.2,
    ("bpe", True): 0.2,
}


@dataclass(frozen=True)
class Model:
    """A SentencePiece model of the tiny corpus, its alpha, and the corpus's first pairs."""

    tokenizer: Tokenizer
    alpha: float
    pairs: list[tuple[str, str]]


def trained(directory, kind: str, byte_fallback: bool = False, vocab_size: int = 60) -> Tokenizer:
    """A model of the tiny corpus with s2s's special ids, trained in-process (about 10 ms)."""
    directory.mkdir(exist_ok=True)
    src, tgt = write_corpus(directory, "train", 400, seed=1)
    lines = src.read_text().splitlines() + tgt.read_text().splitlines()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_prefix=str(directory / "spm"),
        model_type=kind,
        vocab_size=vocab_size + 256 * byte_fallback,
        byte_fallback=byte_fallback,
        pad_id=PAD,
        unk_id=UNK,
        bos_id=BOS,
        eos_id=EOS,
        hard_vocab_limit=False,
        num_threads=1,
        minloglevel=2,
    )
    return Tokenizer(directory / "spm.model")


@pytest.fixture(scope="module", params=list(KINDS), ids=lambda k: f"{k[0]}{'-bytes' if k[1] else ''}")
def model(request, tmp_path_factory) -> Model:
    directory = tmp_path_factory.mktemp("subword")
    tokenizer = trained(directory, *request.param)
    src, tgt = (directory / "train.src").read_text(), (directory / "train.tgt").read_text()
    pairs = list(zip(src.splitlines(), tgt.splitlines(), strict=True))[:PAIRS]
    return Model(tokenizer, KINDS[request.param], pairs)


def sampled(model: Model, epoch: int, numbers: list[int]) -> dict[int, tuple[list[int], list[int]]]:
    """Pair number -> its sampled (source, target) ids in `epoch`, the pairs sampled in that order."""
    keys = mixed_keys(1, epoch, corpus_key("tiny"), np.arange(PAIRS), 0)
    sampler = subword_sampler(model.tokenizer)
    return {i: sampled_pair(sampler, sampler, model.pairs[i], int(keys[i]), model.alpha) for i in numbers}


def test_nothing_dropped_or_sharply_sampled_is_sentencepieces_own_segmentation(model):
    tok, rng = model.tokenizer, random.Random(0)
    sampler = subword_sampler(tok)
    lines = [line for pair in model.pairs[:50] for line in pair] + UNSEEN
    usual = tok.encode(lines)
    if model_spec(tok.sp.serialized_model_proto())[0] == BPE:
        assert [sampler.sample(line, 0.0, rng) for line in lines] == usual
    else:  # ties of a few pieces' scores may fall either way
        sharp = [sampler.sample(line, 1e4, rng) for line in lines]
        scores = [[sum(tok.sp.get_score(i) for i in ids) for ids in side] for side in (sharp, usual)]
        assert np.allclose(*scores, atol=1e-3) and sum(a == b for a, b in zip(sharp, usual, strict=True)) > 90
    assert any(UNK in ids for ids in usual) != any(tok.sp.is_byte(i) for ids in usual for i in ids)


def test_as_many_pieces_as_sentencepieces_own_sampler_draws(model):
    tok, rng, lines = model.tokenizer, random.Random(1), [src for src, _ in model.pairs] * 10
    sampler, usual = subword_sampler(tok), np.array([len(ids) for ids in tok.encode(lines)])
    ours = np.array([len(sampler.sample(line, model.alpha, rng)) for line in lines]) - usual
    theirs = (
        np.array(
            [
                len(tok.sp.encode(line, enable_sampling=True, alpha=model.alpha, nbest_size=-1))
                for line in lines
            ]
        )
        - usual
    )
    error = np.sqrt(ours.var() / len(ours) + theirs.var() / len(theirs))
    assert abs(ours.mean() - theirs.mean()) < 4 * error  # pieces added by sampling: the same mean
    assert ours.mean() > 0.3  # not the usual segmentation


def test_the_same_key_gives_the_same_pieces_whatever_was_sampled_before(model):
    first = sampled(model, 0, list(range(PAIRS)))
    sampler = subword_sampler(model.tokenizer)
    for src, _ in model.pairs:  # other draws, SentencePiece's own generator's included
        sampler.sample(src, model.alpha, random.Random(7))
        model.tokenizer.sp.encode(src, enable_sampling=True, alpha=model.alpha, nbest_size=-1)
    sampled(model, 3, list(range(0, PAIRS, 3)))
    assert sampled(model, 0, list(reversed(range(PAIRS)))) == first  # other pairs before each one


def test_other_epochs_sample_other_segmentations_each_of_the_pairs_text(model):
    tok, everything = model.tokenizer, list(range(PAIRS))
    epochs = [sampled(model, epoch, everything) for epoch in range(2)]
    usual = {i: (tok.encode([s])[0], tok.encode([t])[0]) for i, (s, t) in enumerate(model.pairs)}
    assert sum(epochs[0][i] != usual[i] for i in everything) > PAIRS // 4  # sampling changes pairs
    assert sum(epochs[0][i] != epochs[1][i] for i in everything) > PAIRS // 4  # differently each epoch
    for epoch in epochs:
        for i, (src, tgt) in epoch.items():
            assert tok.decode([src, tgt]) == list(model.pairs[i])


def augmenter(model: Model, data: ParallelData, shares: AugmentConfig) -> Augmenter:
    tok, sampler = model.tokenizer, subword_sampler(model.tokenizer)
    return Augmenter(data, [CorpusPart("tiny", 0, len(data), shares)], tok, tok, 64, (sampler, sampler))


def prepared(model: Model) -> ParallelData:
    tok = model.tokenizer
    return ParallelData.from_lists(
        tok.encode([s for s, _ in model.pairs]), tok.encode([t for _, t in model.pairs])
    )


def steps(model: Model, shares: AugmentConfig, count: int, at: Progress) -> list[list[Batch]]:
    """`count` steps' batches of a fresh order over the prepared pairs, from `at`."""
    data = prepared(model)
    cfg = TrainConfig(max_tokens=300, accum_steps=2, seed=4)
    order = BatchOrder(
        data.costs(), data.target_tokens(), cfg, DistInfo(), None, augmenter(model, data, shares)
    )
    return [order.next_step(at).build(data) for _ in range(count)]


def same(a: list[list[Batch]], b: list[list[Batch]]) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y)
        and all(
            torch.equal(p.src, q.src) and torch.equal(p.tgt_out, q.tgt_out) for p, q in zip(x, y, strict=True)
        )
        for x, y in zip(a, b, strict=True)
    )


def test_a_share_of_0_leaves_the_prepared_ids_as_they_are(model):
    upper = AugmentConfig(upper=0.3)
    unsampled = AugmentConfig(upper=0.3, subword=0.0, subword_alpha=0.9)
    assert same(steps(model, unsampled, 12, Progress()), steps(model, upper, 12, Progress()))
    assert not AugmentConfig(subword=0.0, subword_alpha=0.9).active  # no augmenter at all: as prepared


def test_sampled_pairs_are_planned_batched_and_resumed_alike(model):
    shares = AugmentConfig(subword=0.6, subword_alpha=model.alpha)
    data = prepared(model)
    variants = augmenter(model, data, shares).epoch(4, 0, None, data.costs(), data.target_tokens())
    assert np.all(variants.flags == SUBWORD) and len(variants.pairs) > PAIRS // 10
    batch, tok = variants.batch(len(data) + np.arange(len(variants.pairs))), model.tokenizer
    lengths = torch.maximum((batch.src != PAD).sum(1), (batch.tgt_out != PAD).sum(1))
    planned = variants.costs[variants.examples >= len(data)]  # the lengths the plan batched them by
    assert lengths.tolist() == planned.tolist()
    expected = [model.pairs[int(pair)] for pair in variants.pairs]
    assert (
        list(zip(tok.decode(batch.src.tolist()), tok.decode(batch.tgt_out.tolist()), strict=True)) == expected
    )
    whole = steps(model, shares, 12, Progress())
    at = Progress()
    steps(model, shares, 7, at)  # a process that stopped at step 7; a fresh one goes on
    assert same(steps(model, shares, 5, at), whole[7:])


def test_a_model_of_another_type_is_refused(tmp_path):
    assert model_spec(trained(tmp_path / "u", "unigram").sp.serialized_model_proto())[0] == UNIGRAM
    for kind in ("word", "char"):
        with pytest.raises(DataError, match="needs a unigram or BPE model"):
            subword_sampler(trained(tmp_path / kind, kind, vocab_size=40))
