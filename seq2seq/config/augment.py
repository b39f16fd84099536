"""A corpus's `augment:` block: how often training shows each of its pairs modified like real text."""

from __future__ import annotations

from dataclasses import dataclass, fields

from seq2seq.config.rules import broken


@dataclass(frozen=True)
class AugmentConfig:
    """The share of a corpus's pairs each modifier changes, per epoch (all 0: the text as given).

    What each does is `seq2seq.data.augment`'s: `upper` and `title` case both sides (a pair gets one
    of the two at most), `typos` misspells some source words, `nopunct` drops the final punctuation
    of both sides, `noise` puts a random string on both sides in place of the pair; `subword` encodes
    both sides with a segmentation drawn at random (`seq2seq.data.subword`), `subword_alpha` says how
    far from the usual one.
    """

    upper: float = 0.0  # ALL CAPS on both sides
    title: float = 0.0  # Every Word Capitalized on both sides
    typos: float = 0.0  # swapped, dropped, inserted or repeated letters in the source
    nopunct: float = 0.0  # no final punctuation on either side
    noise: float = 0.0  # a random string copied to both sides (the model learns to copy)
    # both sides encoded with a segmentation drawn at random (subword regularization): a unigram
    # tokenizer's sampling among all segmentations, or BPE-dropout for a BPE tokenizer
    subword: float = 0.0
    # (0, 1]: a unigram tokenizer's smoothing (lower: segmentations further from the usual one), a BPE
    # tokenizer's dropout probability (higher: further)
    subword_alpha: float = 0.1

    @property
    def active(self) -> bool:
        """Whether any pair is ever modified."""
        return any(self.rates().values())

    def rates(self) -> dict[str, float]:
        """Each modifier's share, by name, in the order they are applied."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "subword_alpha"}

    def describe(self) -> str:
        """`upper 0.1, typos 0.1` (the modifiers in use), or "" for none; `subword 0.3 (alpha 0.1)`."""
        alpha = f" (alpha {self.subword_alpha:g})" if self.subword else ""
        return ", ".join(f"{name} {rate:g}" for name, rate in self.rates().items() if rate) + alpha

    def problems(self, where: str) -> list[str]:
        return broken(
            [
                *(
                    (
                        not 0 <= rate <= 1,
                        f"{where}.{name}: must be in [0, 1] (the share of pairs it modifies)",
                    )
                    for name, rate in self.rates().items()
                ),
                (
                    not 0 < self.subword_alpha <= 1,
                    f"{where}.subword_alpha: must be in (0, 1] (a unigram tokenizer's smoothing, a BPE "
                    "tokenizer's dropout probability)",
                ),
                (
                    0 <= self.upper <= 1 and 0 <= self.title <= 1 and self.upper + self.title > 1,
                    f"{where}: upper + title must be at most 1 (a pair is upper-cased or title-cased, "
                    "never both)",
                ),
            ]
        )
