"""What an output line holds besides its translation: its word alignment, its markup put back
(`s2s translate --alignments`, `--markup`; the work is `seq2seq.translate.aligned`'s)."""

from __future__ import annotations

from dataclasses import dataclass

from seq2seq.flags import option
from seq2seq.markup.parse import Dialect, dialect


@dataclass(frozen=True)
class Annotations:
    """What an output line holds besides its translation."""

    alignments: bool = option(
        False,
        "Follow each translation with its word alignment after a tab: Pharaoh i-j pairs, source word i "
        "to target word j, words being the whitespace-separated tokens, counted from 0.",
        "--alignments",
    )
    markup: str | None = option(  # the name of a dialect (`seq2seq.markup.parse.DIALECTS`)
        None,
        "html or xml: lines carry inline tags, translated without them and put back around the words "
        "aligned to those they wrapped; a line whose markup is malformed is an error.",
        "--markup",
    )

    def __post_init__(self) -> None:
        if self.markup:
            dialect(self.markup)  # an unknown dialect is an error now, naming the known ones

    @property
    def dialect(self) -> Dialect | None:
        """The markup's dialect, if lines carry markup."""
        return dialect(self.markup) if self.markup else None

    @property
    def wanted(self) -> bool:
        return self.alignments or self.markup is not None

    def record(self) -> dict[str, object]:
        """What a resumed output must share: none of it when nothing is asked (as before these)."""
        if not self.wanted:
            return {}
        return {"alignments": self.alignments, "markup": self.markup}
