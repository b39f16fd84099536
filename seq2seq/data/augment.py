"""Modifiers that make clean text look like real text, and which pairs get them.

What each does (`AugmentConfig` sets how often): `upper` ALL-CAPS both sides; `title` Capitalizes
Every Word of both sides; `typos` misspells about one source word in ten (at least one) by swapping two
neighbouring letters, dropping a letter, inserting one of the sentence's own letters or repeating a
letter; `nopunct` removes the final punctuation of both sides; `noise` puts a string of 1-5 random
"words" made of the source's own letters and digits on both sides, in place of the pair, so the model
learns to copy what it cannot translate. A pair gets `upper` or `title`, not both; `noise` replaces
the others. A change that would leave a side empty is not made. `subword` changes no text: the pair
is encoded with a sampled segmentation (`seq2seq.data.subword`), after the others.

Everything random is a function of a 64-bit key (`mixed_keys`, from the seed, the epoch, the corpus
and the pair), never of a global state: which modifiers a pair gets (`choose`) and how they change
it (`modify_pair`, a `random.Random` seeded by the key). So every process, in any order, at any
time, gets the same modified pair.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Callable, Iterator

import numpy as np

from seq2seq.config.augment import AugmentConfig
from seq2seq.config.data import CorpusConfig
from seq2seq.data.corpora import side_chunks

UPPER, TITLE, TYPOS, NOPUNCT, NOISE, SUBWORD = 1, 2, 4, 8, 16, 32  # a pair's modifiers, as bits
MODIFIERS = {
    "upper": UPPER,
    "title": TITLE,
    "typos": TYPOS,
    "nopunct": NOPUNCT,
    "noise": NOISE,
    "subword": SUBWORD,
}
TYPO_SHARE = 0.1  # misspelled words per source word (at least one)
END_PUNCT = re.compile(r"[\s.!?…,;:。！？．｡、،؟۔।]+$")  # sentence-final marks of many scripts
WORD_START = re.compile(r"(?<!\S)\w")
TOKENIZER_SEED = 0x746F6B  # the tokenizer's sample: not any training epoch's keys
VALIDATION_SEED = 0x76616C  # the validation copy (train.valid_augment): not any epoch's either
SIDE = {"src": 1, "tgt": 2}
_GOLDEN, _TOP = np.uint64(0x9E3779B97F4A7C15), 2.0**-53


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer on uint64 values: every input bit moves about half the output bits."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def mixed_keys(*parts: int | np.ndarray) -> np.ndarray:
    """(n,) uint64: one key per combination of `parts` (non-negative ints, or (n,) arrays of them);
    any change of any part gives an unrelated key."""
    key = np.zeros(1, np.uint64)
    with np.errstate(over="ignore"):
        for part in parts:
            key = _mix((key + _GOLDEN) ^ np.asarray(part).astype(np.uint64))
    return key


def corpus_key(name: str) -> int:
    """A corpus's part of its pairs' keys: from its name, so adding a corpus changes no other's."""
    return zlib.crc32(name.encode("utf-8"))


def _uniform(keys: np.ndarray, salt: int) -> np.ndarray:
    """(n,) floats in [0, 1), one per key, independent for each `salt`."""
    return (_mix(mixed_keys(salt) ^ keys) >> np.uint64(11)).astype(np.float64) * _TOP


def choose(keys: np.ndarray, cfg: AugmentConfig) -> np.ndarray:
    """(n,) uint8: the modifiers of the pair of each key (bits; 0 = none), each at its share."""
    case = _uniform(keys, 1)
    flags = np.where(case < cfg.upper, UPPER, 0) | np.where(
        (case >= cfg.upper) & (case < cfg.upper + cfg.title), TITLE, 0
    )
    flags |= np.where(_uniform(keys, 2) < cfg.typos, TYPOS, 0)
    flags |= np.where(_uniform(keys, 3) < cfg.nopunct, NOPUNCT, 0)
    flags |= np.where(_uniform(keys, 5) < cfg.subword, SUBWORD, 0)
    flags = np.where(_uniform(keys, 4) < cfg.noise, NOISE, flags)  # noise replaces the pair
    return flags.astype(np.uint8)


def title(text: str) -> str:
    """Every word's first letter upper-cased, the rest as it was (unlike `str.title`: iPhone stays)."""
    return WORD_START.sub(lambda m: m.group().upper(), text)


def no_end_punct(text: str) -> str:
    """Without its final punctuation (and the spaces before it); unchanged if nothing would remain."""
    return END_PUNCT.sub("", text) or text


def typos(text: str, rng: random.Random) -> str:
    """About one word in ten (at least one) of those with two letters or more, misspelled once."""
    words = text.split(" ")
    candidates = [i for i, word in enumerate(words) if sum(c.isalpha() for c in word) >= 2]
    if not candidates:
        return text
    letters = [c for c in text if c.isalpha()]
    count = min(len(candidates), max(1, round(TYPO_SHARE * len(words))))
    for i in sorted(rng.sample(candidates, count)):
        words[i] = _typo(words[i], rng, letters)
    return " ".join(words)


def _typo(word: str, rng: random.Random, letters: list[str]) -> str:
    """One of four misspellings, at a random letter: swap with the next letter, drop, insert, repeat."""
    spots = [j for j, c in enumerate(word) if c.isalpha()]
    swaps = [j for j in spots if j + 1 < len(word) and word[j + 1].isalpha() and word[j + 1] != word[j]]
    kind = rng.randrange(4)
    if kind == 0 and swaps:
        j = rng.choice(swaps)
        return word[:j] + word[j + 1] + word[j] + word[j + 2 :]
    j = rng.choice(spots)
    if kind == 1:
        return word[:j] + word[j + 1 :]
    if kind == 2:
        return word[:j] + rng.choice(letters) + word[j:]
    return word[: j + 1] + word[j:]  # repeat (or a swap with no two different neighbours)


def noise(text: str, rng: random.Random) -> str:
    """1-5 words of 1-8 characters drawn from `text`'s letters and digits ("" if it has none)."""
    chars = [c for c in text if c.isalnum()]
    if not chars:
        return ""
    return " ".join(
        "".join(rng.choice(chars) for _ in range(rng.randint(1, 8))) for _ in range(rng.randint(1, 5))
    )


def modify_pair(src: str, tgt: str, flags: int, key: int) -> tuple[str, str]:
    """The pair with the modifiers `flags` (`choose`) applied; `key` seeds its random choices."""
    rng = random.Random(key)
    if flags & NOISE:
        copied = noise(src, rng)
        return (copied, copied) if copied else (src, tgt)
    if flags & UPPER:
        src, tgt = src.upper(), tgt.upper()
    elif flags & TITLE:
        src, tgt = title(src), title(tgt)
    if flags & TYPOS:
        src = typos(src, rng)
    if flags & NOPUNCT:
        src, tgt = no_end_punct(src), no_end_punct(tgt)
    return src, tgt


def modified_copy(
    src: list[str], tgt: list[str], cfg: AugmentConfig, seed: int
) -> tuple[list[str], list[str]]:
    """A validation set's modified copy (`train.valid_augment`): each pair modified as training
    modifies a corpus's, at `cfg`'s shares, its choices fixed by `seed` and the pair's number."""
    keys = mixed_keys(VALIDATION_SEED, seed, np.arange(len(src)))
    flags = choose(keys, cfg) & ~np.uint8(NOISE | SUBWORD)
    pairs = [
        modify_pair(s, t, int(f), int(k)) if f and s.strip() else (s, t)
        for s, t, f, k in zip(src, tgt, flags, keys, strict=True)
    ]
    return [s for s, _ in pairs], [t for _, t in pairs]


# what each modifier does to one line, for a test set (`seq2seq.evaluation.modified_sets`)
LINE_MODIFIERS: dict[str, Callable[[str, random.Random], str]] = {
    "upper": lambda text, rng: text.upper(),
    "title": lambda text, rng: title(text),
    "typos": typos,
    "nopunct": lambda text, rng: no_end_punct(text),
}


def sample_chunks(corpus: CorpusConfig, side: str) -> Iterator[list[str]]:
    """The lines of one side of the corpus, in chunks, modified as training modifies them: what the
    tokenizer learns from. Each line is modified on its own (typos on source lines only); noise is
    left out (its strings are made of pieces the vocabulary has anyway), and so is subword (it changes
    no text)."""
    cfg = corpus.augment
    start = 0
    for chunk in side_chunks(corpus, side):
        if cfg.active:
            keys = mixed_keys(
                TOKENIZER_SEED, corpus_key(corpus.name), SIDE[side], start + np.arange(len(chunk))
            )
            flags = choose(keys, cfg) & ~np.uint8(NOISE | SUBWORD | (TYPOS if side == "tgt" else 0))
            for i in np.flatnonzero(flags):
                chunk[i] = modify_pair(chunk[i], "", int(flags[i]), int(keys[i]))[0]
        start += len(chunk)
        yield chunk
