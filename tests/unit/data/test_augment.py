"""Each modifier does what it says, on the sides it says, at the share the config gives it, and the
same key always gives the same modified pair."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from seq2seq.config.augment import AugmentConfig
from seq2seq.config.data import CorpusConfig
from seq2seq.data.augment import (
    MODIFIERS,
    NOISE,
    NOPUNCT,
    TITLE,
    TYPOS,
    UPPER,
    choose,
    mixed_keys,
    modified_copy,
    modify_pair,
    sample_chunks,
    title,
)

WORDS = "ein Mann fährt mit dem Fahrrad über eine grüne Wiese und zwei Hunde spielen im Schnee".split()
PAIRS = 4000
SHARES = AugmentConfig(upper=0.1, title=0.05, typos=0.2, nopunct=0.15, noise=0.03)


def synthetic_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """German-looking sources of 4-12 words ending in punctuation; their targets reversed, in English case."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 12))]
        end = rng.choice(".!?")
        pairs.append((" ".join(words) + end, " ".join(reversed(words)).capitalize() + " ."))
    return pairs


def within(count: int, share: float, n: int) -> bool:
    """Whether `count` of `n` is the binomial share `share`, within 4 standard deviations."""
    return abs(count - share * n) <= 4 * np.sqrt(n * share * (1 - share)) + 1


def test_each_modifier_is_chosen_at_its_share_and_upper_title_and_noise_exclude_the_others():
    flags = choose(mixed_keys(1, 0, 7, np.arange(PAIRS)), SHARES)
    for name, bit in MODIFIERS.items():
        share = SHARES.rates()[name]
        expected = share if bit in (UPPER, TITLE, NOISE) else share * (1 - SHARES.noise)  # noise replaces
        assert within(np.count_nonzero(flags & bit), expected, PAIRS), name
    assert not np.any((flags & UPPER) & ((flags & TITLE) >> 1))
    assert np.all(flags[(flags & NOISE) > 0] == NOISE)
    assert not choose(mixed_keys(1, 0, 7, np.arange(PAIRS)), AugmentConfig()).any()


def test_choices_depend_on_every_part_of_the_key_and_nothing_else():
    keys = mixed_keys(1, 0, 7, np.arange(PAIRS))
    assert np.array_equal(keys, mixed_keys(1, 0, 7, np.arange(PAIRS)))
    for other in (mixed_keys(2, 0, 7, np.arange(PAIRS)), mixed_keys(1, 1, 7, np.arange(PAIRS))):
        assert np.count_nonzero(other == keys) == 0
    assert np.array_equal(
        mixed_keys(1, 0, 7, np.arange(PAIRS))[100:200], mixed_keys(1, 0, 7, np.arange(100, 200))
    )


def modified(flags: int) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """(pair, the pair modified by `flags`) for the synthetic pairs, each with its own key."""
    keys = mixed_keys(3, 1, 2, np.arange(PAIRS))
    pairs = synthetic_pairs(PAIRS)
    return [(pair, modify_pair(*pair, flags, int(k))) for pair, k in zip(pairs, keys, strict=True)]


def test_upper_and_title_case_both_sides():
    for (src, tgt), (new_src, new_tgt) in modified(UPPER):
        assert (new_src, new_tgt) == (src.upper(), tgt.upper())
    for (src, tgt), (new_src, new_tgt) in modified(TITLE):
        for before, after in ((src, new_src), (tgt, new_tgt)):
            assert after.lower() == before.lower() and after.split(" ") == [
                w[:1].upper() + w[1:] for w in before.split(" ")
            ]
    assert title("the iPhone of ein mann") == "The IPhone Of Ein Mann"


def damerau_levenshtein(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def test_typos_misspell_about_one_source_word_in_ten_and_leave_the_target():
    changed = 0
    for (src, tgt), (new_src, new_tgt) in modified(TYPOS)[:500]:
        assert new_tgt == tgt and len(new_src.split(" ")) == len(src.split(" "))
        words = len(src.split(" "))
        edits = damerau_levenshtein(src, new_src)
        assert edits <= max(1, round(0.1 * words))
        changed += edits > 0
    assert changed > 0.9 * 500  # a swap of two equal letters (the "ll" of "Wellen") changes nothing


def test_nopunct_drops_the_final_punctuation_of_both_sides():
    for (src, tgt), (new_src, new_tgt) in modified(NOPUNCT):
        assert new_src == src[:-1] and new_tgt == tgt[:-2]
    assert modify_pair("?!", "...", NOPUNCT, 1) == ("?!", "...")  # never a side left empty


def test_noise_copies_a_string_of_the_sources_characters_to_both_sides():
    for (src, _), (new_src, new_tgt) in modified(NOISE)[:500]:
        assert new_src == new_tgt and 1 <= len(new_src.split(" ")) <= 5
        assert set(new_src) - {" "} <= set(src) and re.fullmatch(r"\w{1,8}( \w{1,8})*", new_src)


def test_the_same_key_gives_the_same_pair():
    pair, flags = synthetic_pairs(1)[0], UPPER | TYPOS | NOPUNCT
    assert len({modify_pair(*pair, flags, 12345) for _ in range(5)}) == 1
    assert len({modify_pair(*pair, flags, key) for key in range(30)}) > 5


@pytest.mark.parametrize("side", ["src", "tgt"])
def test_the_tokenizers_sample_is_modified_at_the_corpus_shares(tmp_path, side):
    pairs = synthetic_pairs(PAIRS)
    paths = {}
    for name, lines in (("src", [s for s, _ in pairs]), ("tgt", [t for _, t in pairs])):
        paths[name] = tmp_path / f"c.{name}"
        paths[name].write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    corpus = CorpusConfig(name="c", src=str(paths["src"]), tgt=str(paths["tgt"]), augment=SHARES)
    given = paths[side].read_text(encoding="utf-8").splitlines()
    sample = [line for chunk in sample_chunks(corpus, side) for line in chunk]
    assert len(sample) == len(given)
    kept = 1 - SHARES.noise  # the noise share is left as given: its pairs get no other modifier
    upper = sum(a != b and a == a.upper() for a, b in zip(sample, given, strict=True))
    assert within(upper, SHARES.upper * kept, PAIRS)
    spelled = sum(
        a.lower().rstrip(".!? ") != b.lower().rstrip(".!? ") for a, b in zip(sample, given, strict=True)
    )
    assert within(spelled, SHARES.typos * kept, PAIRS) if side == "src" else spelled == 0


def test_the_validation_copy_is_fixed_by_its_seed_and_modifies_pairs_at_their_shares():
    src, tgt = (list(side) for side in zip(*synthetic_pairs(PAIRS), strict=True))
    shares = AugmentConfig(upper=0.2, typos=0.3, nopunct=0.1)
    copy = modified_copy(src, tgt, shares, seed=1)
    assert copy == modified_copy(src, tgt, shares, seed=1)
    assert copy != modified_copy(src, tgt, shares, seed=2)
    assert (src, tgt) == tuple(list(side) for side in zip(*synthetic_pairs(PAIRS), strict=True))  # kept
    new_src, new_tgt = copy
    assert len(new_src) == len(new_tgt) == PAIRS
    upper = sum(s == s.upper() != s.lower() for s in new_src)
    assert within(upper, 0.2, PAIRS)
    pairs = zip(new_src, src, new_tgt, tgt, strict=True)
    typo = sum(s.lower() != o.lower() and t == o_t for s, o, t, o_t in pairs)
    assert within(typo, 0.3 * 0.8 * 0.9, PAIRS)  # typos alone: not upper-cased, punctuation kept
    assert modified_copy(["", "  "], ["", " "], shares, seed=1) == (["", "  "], ["", " "])  # blank kept
