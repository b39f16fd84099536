"""Where a line is translated: a multilingual run's target language, a corpus tag put before the
source, and a language to go through (a pivot). One value, carried by every request and job."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from seq2seq.flags import option


@dataclass(frozen=True)
class Direction:
    """`--to`, `--tag` and `--pivot`: "" for none (a bilingual run's only direction, no tag)."""

    to: str = option(
        "", "A multilingual run: the language to translate into (a code it was trained with, e.g. fr)."
    )
    tag: str = option("", "Start every source with this control token, e.g. <bt> (tokenizer.control_tokens).")
    pivot: str = option(
        "",
        "A multilingual run: translate into this language first (e.g. en), then from it into --to (for a "
        "direction it never trained).",
    )

    @property
    def direct(self) -> Direction:
        """This direction without its pivot: what one engine call translates."""
        return dataclasses.replace(self, pivot="")

    def into(self, to: str) -> Direction:
        """The same tag, into `to`, directly."""
        return Direction(to, self.tag)


STRAIGHT = Direction()  # a bilingual run's direction, or a multilingual run's only target, no tag
