"""Sentences of a block of words: a model trained on sentences translates a paragraph one sentence at
a time, or it drops and merges them.

The boundaries are sentencex's (Wikimedia's rule-based segmenter): maintained, with rules for about
300 languages (de, en, fr, cs among them; abbreviations such as `z. B.` or `Dr.` do not end a
sentence) and a language-independent fallback for a code it does not know, pure rules with no model
to download, and wheels for Linux, macOS and Windows. A boundary that falls inside a word moves to
the end of that word: a sentence is a run of whole words.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import pairwise

from sentencex import segment

WordSpan = tuple[int, int]  # words [start, end)


class Sentences:
    """The sentences of a run of words, by the rules of one language."""

    def __init__(self, language: str) -> None:
        self.language = language  # an ISO 639 code; "" (or one sentencex lacks): no language's own rules

    def __call__(self, words: Sequence[str]) -> list[WordSpan]:
        """The word spans of the sentences of `words`, in order, covering them all."""
        if not words:
            return []
        text = " ".join(words)
        starts = [0]
        for word in words[:-1]:
            starts.append(starts[-1] + len(word) + 1)
        bounds = [0]
        at = 0
        for sentence in segment(self.language, text):
            found = text.find(sentence.strip(), at) if sentence.strip() else -1
            if found < 0:
                continue
            # the first word that starts where the sentence does, or after (inside a word: the next)
            first = bisect.bisect_left(starts, found)
            if bounds[-1] < first < len(words):
                bounds.append(first)
            at = found + len(sentence.strip())
        return list(pairwise([*bounds, len(words)]))


def whole(words: Sequence[str]) -> list[WordSpan]:
    """A run of words as one sentence (no splitting)."""
    return [(0, len(words))] if words else []
