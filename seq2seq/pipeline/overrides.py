"""A training's `--set` overrides, each with who gives it: the pipeline itself, or a key of the
pipeline file (`training.set`, `steps.teacher.set`).

What the pipeline sets itself is its own: where a training writes its run (`run_dir`), its data, an
ensemble member's shared tokenizer, a shrunk student's start, the back-translation tag among the
control tokens. An entry of the file that names one of those keys (or a section holding one, or a
key inside one) would replace what the steps rely on, or be replaced by it: it is refused, naming
where it is given, the key and the steps (`claimed`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PIPELINE = ""  # who gives an override the pipeline sets itself


@dataclass(frozen=True)
class Override:
    given: str  # PIPELINE, or the file's key that gives it (`training.set`)
    entry: str  # `section.key=value`, as `s2s train --set` takes it
    why: str = ""  # the pipeline's: why it sets the key (what the file gives instead)

    @property
    def key(self) -> str:
        return self.entry.split("=", 1)[0].strip()


# before every training's overrides, with its step's folder (`trainings.run_config`)
RUN_DIR = Override(PIPELINE, "run_dir=", "a training's run is its step's folder in the workspace")


def given(where: str, entries: Iterable[str]) -> list[Override]:
    """The file's entries at `where` (`training.set`)."""
    return [Override(where, entry) for entry in entries]


def entries(overrides: Sequence[Override]) -> list[str]:
    return [o.entry for o in overrides]


def claimed(overrides: Sequence[Override]) -> list[tuple[str, str, str]]:
    """(where, key, why) of each entry of the file whose key is one the pipeline sets itself, holds
    one (`data`) or lies in one; `why` is the pipeline's."""
    owned = [RUN_DIR, *(o for o in overrides if o.given == PIPELINE)]
    found = []
    for o in overrides:
        clash = next((mine for mine in owned if _overlap(o.key, mine.key)), None)
        if o.given != PIPELINE and clash is not None:
            found.append((o.given, o.key, clash.why))
    return found


def _overlap(key: str, other: str) -> bool:
    return key == other or other.startswith(key + ".") or key.startswith(other + ".")
