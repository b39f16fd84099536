#!/usr/bin/env python3
"""Generate the reader quickstarts' corpora: topic classification and named-entity tagging.

    classify: a sentence -> its topic (sport, food, weather, music; unevenly frequent). Each
              sentence mixes words of its topic with fewer words of another topic and filler, so
              the model must weigh evidence, not spot one word.
    tag:      a sentence -> one BIO tag per word (B-PER, I-PER, B-LOC, I-LOC, B-ORG, I-ORG, O).
              Some names are people in one sentence and places in another (Jordan, Georgia,
              Paris, Washington), so the context decides, and some names appear only in the
              valid and test splits, so the model must read the context, not remember names.

Deterministic (seeded); written to data/reader/{classify,tag}/{train,valid,test}.{src,tgt}.
The script prints each split's majority-class baseline, which the README quotes.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from pathlib import Path

TOPICS = {
    "sport": "goal match team coach referee stadium score league player striker tournament penalty "
    "season champion keeper sprint medal tennis racket whistle",
    "food": "bread cheese soup recipe kitchen oven pepper garlic dinner salad noodles bakery butter "
    "chef spice dessert tomato grill lunch flavour",
    "weather": "rain storm cloud sunny wind forecast thunder snow fog humid breeze frost drizzle "
    "temperature umbrella hail heatwave chilly gust overcast",
    "music": "song guitar concert melody band drummer album chorus piano lyrics singer orchestra "
    "rhythm violin stage tune festival jazz opera chord",
}
TOPIC_SHARE = {"sport": 0.4, "food": 0.25, "weather": 0.2, "music": 0.15}
FILLER = (
    "the a an and but so then today yesterday we they she he it was is were very really quite "
    "our their some many few after before during with without about again still just also "
    "everyone nobody people friends town city morning evening night week"
).split()

FIRST = "Anna Maria John Peter Li Omar Sofia Lucas Amara Kenji Elena Tom Jordan Georgia Paris".split()
LAST = "Smith Garcia Chen Okafor Novak Silva Tanaka Brown Kowalski Haddad Washington".split()
PLACES = [
    "Berlin", "Lagos", "Lima", "Oslo", "Jordan", "Georgia", "Paris", "Washington",
    "New York", "San Diego", "Cape Town", "Buenos Aires",
]  # fmt: skip
ORGS = ["Acme Corp", "Blue River Bank", "Globex", "Initech Labs", "Red Cross", "Northwind Traders"]
UNSEEN = {"Kenji", "Elena", "Haddad", "Tanaka", "Oslo", "Buenos Aires", "Globex", "Red Cross"}  # not in train
TEMPLATES = [
    "{PER} moved to {LOC} last year .",
    "{PER} works for {ORG} in {LOC} .",
    "yesterday {PER} met {PER} at the {ORG} office .",
    "the {ORG} team flew from {LOC} to {LOC} .",
    "{PER} said that {ORG} will open a branch in {LOC} .",
    "we visited {LOC} with {PER} .",
    "according to {PER} , {LOC} is lovely in spring .",
    "{ORG} hired {PER} after the interview .",
    "my friend {PER} grew up near {LOC} .",
    "a spokesperson for {ORG} thanked {PER} .",
]


def topic_line(rng: random.Random, split: str) -> tuple[str, str]:
    label = rng.choices(list(TOPIC_SHARE), weights=list(TOPIC_SHARE.values()))[0]
    own = rng.randint(2, 4)
    other = rng.choice([t for t in TOPICS if t != label])
    words = rng.sample(TOPICS[label].split(), own) + rng.sample(
        TOPICS[other].split(), rng.randint(0, own - 1)
    )
    words += rng.choices(FILLER, k=rng.randint(4, 10))
    rng.shuffle(words)
    return " ".join(words), label


def entity(rng: random.Random, kind: str, names: set[str]) -> list[str]:
    """A person, place or organization among `names`."""
    if kind == "PER":
        first = rng.choice([n for n in FIRST if n in names])
        last = [rng.choice([n for n in LAST if n in names])] if rng.random() < 0.7 else []
        return [first, *last]
    return rng.choice([n for n in (PLACES if kind == "LOC" else ORGS) if n in names]).split()


def tagged_line(rng: random.Random, split: str) -> tuple[str, str]:
    names = set(FIRST + LAST + PLACES + ORGS) - (UNSEEN if split == "train" else set())
    words, tags = [], []
    for token in rng.choice(TEMPLATES).split():
        if token.startswith("{"):
            kind = token[1:-1]
            name = entity(rng, kind, names)
            words += name
            tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(name) - 1)
        else:
            words.append(token)
            tags.append("O")
    return " ".join(words), " ".join(tags)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("data/reader"))
    parser.add_argument("--train", type=int, default=8000)
    parser.add_argument("--valid", type=int, default=500)
    parser.add_argument("--test", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    for task, make in (("classify", topic_line), ("tag", tagged_line)):
        rng = random.Random(f"{args.seed}-{task}")
        out = args.out / task
        out.mkdir(parents=True, exist_ok=True)
        for split, count in (("train", args.train), ("valid", args.valid), ("test", args.test)):
            pairs = [make(rng, split) for _ in range(count)]
            (out / f"{split}.src").write_text("".join(f"{s}\n" for s, _ in pairs), encoding="utf-8")
            (out / f"{split}.tgt").write_text("".join(f"{t}\n" for _, t in pairs), encoding="utf-8")
            labels = Counter(label for _, line in pairs for label in line.split())
            top, top_count = labels.most_common(1)[0]
            unit = "lines" if task == "classify" else "tags"
            share = 100 * top_count / labels.total()
            print(f"{out}/{split}: {count} lines; majority baseline {top}: {share:.1f}% of {unit}")


if __name__ == "__main__":
    main()
