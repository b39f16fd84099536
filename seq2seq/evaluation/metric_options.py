"""How hypotheses are compared with references (`s2s evaluate --tokenize`, `--lowercase`,
`--chrf-plus`): plain values, sacrebleu imported only when a metric is made from them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seq2seq.errors import EvaluateError
from seq2seq.flags import option

if TYPE_CHECKING:
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.metrics.base import Metric


@dataclass(frozen=True)
class MetricOptions:
    """How hypotheses are compared with references; every choice shows up in the signatures.

    The defaults are sacrebleu's, so a score here matches the `sacrebleu` command's with its defaults.
    """

    tokenize: str = option("13a", "BLEU tokenizer: 13a, intl, char, zh, spm, flores200, none...")
    lowercase: bool = option(False, "Case-insensitive BLEU and chrF (TER always is, as in sacrebleu).")
    chrf_plus: bool = option(False, "Score chrF++ (with word bigrams) instead of chrF.", "--chrf-plus")

    def bleu(self, references: Sequence[Sequence[str]] | None = None, sentence: bool = False) -> BLEU:
        """Corpus BLEU, or sentence BLEU (effective n-gram order) when `sentence` is True."""
        from sacrebleu.metrics import BLEU

        if self.tokenize not in BLEU.TOKENIZERS:
            raise EvaluateError(
                f"unknown --tokenize {self.tokenize!r}; choose one of {', '.join(BLEU.TOKENIZERS)}"
            )
        try:
            return BLEU(
                tokenize=self.tokenize,
                lowercase=self.lowercase,
                effective_order=sentence,
                references=references,
            )
        except ImportError as e:
            raise EvaluateError(f"--tokenize {self.tokenize} needs an extra package: {e}") from None

    def chrf(self, references: Sequence[Sequence[str]] | None = None) -> CHRF:
        from sacrebleu.metrics import CHRF

        return CHRF(word_order=2 if self.chrf_plus else 0, lowercase=self.lowercase, references=references)

    def metrics(self, references: Sequence[Sequence[str]] | None = None) -> dict[str, Metric]:
        """Fresh sacrebleu metrics, keyed by METRICS; `references` (one stream per reference) are cached."""
        from sacrebleu.metrics import TER

        return {
            "bleu": self.bleu(references),
            "chrf": self.chrf(references),
            "ter": TER(references=references),  # case-insensitive, as sacrebleu's TER is by default
        }
