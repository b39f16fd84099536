"""Word alignments without a model: Pharaoh lines, symmetrization, alignment error rate, the external
aligner, and the bridge between words and SentencePiece pieces.

A line's words are its whitespace-separated tokens; a pair `(i, j)` links source word `i` to target
word `j`, both counted from 0.
"""

Pair = tuple[int, int]  # (source word, target word), both 0-based
