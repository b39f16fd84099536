"""Which lines a tokenizer learns from: a seeded sample of the training corpora's sides, in proportion
to each corpus's size x weight, or balanced across languages in a multilingual run
(`seq2seq.data.tokenizer` trains SentencePiece on it)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from seq2seq.config.data import CorpusConfig
from seq2seq.data.augment import sample_chunks
from seq2seq.data.corpora import count_pairs

Side = tuple[CorpusConfig, str]  # a corpus and one of its sides ("src" or "tgt")


def sample_lines(sides: Sequence[Side], limit: int, seed: int = 0) -> list[str]:
    """Non-empty lines of the corpora's sides, sampled in proportion to size x weight, or balanced
    across languages in a multilingual run.

    With every weight 1 and no languages, a seeded uniform sample of `limit` lines if there are more
    (reservoir sampling), else all of them in order. Otherwise each line is taken a number of times
    drawn around its side's expected count (`expected_takes`); a weight of 2 takes a line twice, so
    the sample shows what the corpus mix will show the model, lines modified as each corpus's `augment`
    says (`sample_chunks`). Streamed: memory holds the sample only.
    """
    rng = random.Random(seed)
    if any(corpus.weight != 1 or corpus.direction for corpus, _ in sides):
        taken = []
        for (corpus, side), expected in zip(sides, expected_takes(sides, limit), strict=True):
            whole, part = int(expected), expected - int(expected)
            for chunk in sample_chunks(corpus, side):
                for line in chunk:
                    if line.strip():
                        taken += [line] * (whole + (rng.random() < part))
        return taken
    sample: list[str] = []
    seen = 0
    for corpus, side in sides:
        for chunk in sample_chunks(corpus, side):
            for line in chunk:
                if not line.strip():
                    continue
                seen += 1
                if len(sample) < limit:
                    sample.append(line)
                elif (j := rng.randrange(seen)) < limit:
                    sample[j] = line
    return sample


def expected_takes(sides: Sequence[Side], limit: int) -> list[float]:
    """How many times, on average, the tokenizer's sample takes each line of each side (about `limit`
    lines in all, or all of them weighted if there are fewer).

    Bilingual: weight x s for every side (s = min(1, limit / the weighted line count)). Multilingual:
    every language gets the same share of the sample, however many corpora it is on (English on six
    sides of an X<->en run, German on two) and however large they are; within a language, lines are
    taken by size x weight. A language with few lines has them taken several times: it keeps its
    pieces in the joint vocabulary.
    """
    counts = {corpus.name: count_pairs(corpus) for corpus in {c.name: c for c, _ in sides}.values()}
    mass = [counts[c.name] * c.weight for c, _ in sides]
    budget = min(limit, sum(mass))
    if not any(corpus.direction for corpus, _ in sides):
        return [c.weight * budget / max(sum(mass), 1) for c, _ in sides]
    language = [c.src_lang if side == "src" else c.tgt_lang for c, side in sides]
    per_language = {
        code: sum(m for m, lang in zip(mass, language, strict=True) if lang == code) for code in set(language)
    }
    share = budget / len(per_language)
    return [
        c.weight * share / max(per_language[lang], 1) for (c, _), lang in zip(sides, language, strict=True)
    ]
