"""Random well-formed lines of markup, random translations and random alignments, from a seed."""

from __future__ import annotations

import random
from dataclasses import dataclass

# plain words with the characters that must be escaped, and some that may be
WORDS = ["Haus", "Garten.", "a&b", "x<y", "1>0", "café", '"q"', "it's", "«Zitat»", "&amp;"]


@dataclass(frozen=True)
class Kit:
    """What one dialect's random lines are made of."""

    names: list[str]
    attributes: list[str]  # each with its leading space
    closes: list[str]  # how a close tag may be written: "</{}>" variants
    any_case: bool  # a close tag may differ in case from its open tag
    standalone: list[str]
    entities: dict[str, list[str]]  # a character and how it may be written


XML_KIT = Kit(
    names=["g", "x:ph", "bpt", "b"],
    attributes=["", ' id="1"', " ctype='x-bold'", ' title="a &amp; b"', '  a="1"  b="2"'],
    closes=["</{}>", "</{} >"],
    any_case=False,
    standalone=["<br/>", '<x id="2"/>', "<!-- note -->", "<ph />", "<?pi x?>"],
    entities={
        "&": ["&amp;", "&#38;", "&#x26;"],
        "<": ["&lt;", "&#60;"],
        ">": [">", "&gt;"],
        '"': ['"', "&quot;"],
        "'": ["'", "&apos;", "&#39;"],
    },
)
HTML_KIT = Kit(
    names=["b", "i", "a", "span", "EM"],
    attributes=["", ' href="x.html"', " class='c d'", " id=x1", " hidden", ' title="a>b"'],
    closes=["</{}>", "</{} >"],
    any_case=True,
    standalone=["<br/>", "<br>", "<BR>", '<img src="a.png" alt=pic>', "<!-- note -->", "<hr />"],
    entities={
        "&": ["&amp;", "&#38;"],
        "<": ["&lt;", "&#x3C;"],
        ">": [">", "&gt;"],
        '"': ['"', "&quot;"],
        "'": ["'", "&#39;", "&apos;"],
        "é": ["é", "&eacute;", "&#233;"],
    },
)
KITS = {"html": HTML_KIT, "xml": XML_KIT}


def written(word: str, kit: Kit, rng: random.Random) -> str:
    """`word` as markup text, each special character escaped one of the ways the dialect allows."""
    return "".join(rng.choice(kit.entities[c]) if c in kit.entities else c for c in word)


def pieces(kit: Kit, rng: random.Random, depth: int = 0) -> list[tuple[str, bool]]:
    """A random sequence of (markup, is a word): words, standalone tags, nested elements."""
    out: list[tuple[str, bool]] = []
    for _ in range(rng.randint(0, 8 if depth == 0 else 4)):
        draw = rng.random()
        if draw < 0.55:
            out.append((written(rng.choice(WORDS), kit, rng), True))
        elif draw < 0.7:
            out.append((rng.choice(kit.standalone), False))
        elif depth < 3:
            name = rng.choice(kit.names)
            out.append((f"<{name}{rng.choice(kit.attributes)}>", False))
            out += pieces(kit, rng, depth + 1)
            close = rng.choice(kit.closes).format(name)
            out.append((close.upper() if kit.any_case and rng.random() < 0.3 else close, False))
    return out


def random_line(kit: Kit, rng: random.Random, inside_words: bool) -> str:
    """A well-formed line; tags stand between words unless `inside_words`, when words may touch."""
    out: list[str] = []
    gap: list[str] = []  # the tags since the last word
    seen_word = False
    for text, is_word in pieces(kit, rng):
        if not is_word:
            gap.append(text)
            continue
        if seen_word and not (inside_words and rng.random() < 0.3):
            # the one space this boundary needs, anywhere among its tags
            gap.insert(rng.randint(0, len(gap)), rng.choice([" ", "  ", "\t"]))
        out += [t if rng.random() < 0.8 else t + " " for t in gap] + [text]
        gap, seen_word = [], True
    out += gap
    return rng.choice(["", " "]) + "".join(out) + rng.choice(["", " "])


def random_target(rng: random.Random, most: int) -> str:
    """Up to `most` plain words, spaced at random."""
    words = [rng.choice(WORDS) for _ in range(rng.randint(0, most))]
    return "".join(w + rng.choice([" ", "  ", "\t"]) for w in words)


def random_alignment(rng: random.Random, m: int, n: int) -> list[tuple[int, int]]:
    """Pairs between `m` source and `n` target words: none, a few, or many (many-to-many)."""
    density = rng.choice([0.0, 0.1, 0.3, 0.8])
    return [(i, j) for i in range(m) for j in range(n) if rng.random() < density]
