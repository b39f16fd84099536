"""The tasks a model can do, named here once.

Each wing turns the task into behaviour once, where it learns it (a chooser: a small mapping from
`Task` to the object that does the work), and passes that object down; nothing below asks which
task it serves.
"""

from __future__ import annotations

from enum import Enum


class Task(str, Enum):
    """What a run's model does with a source: translate it, or read it (an encoder-only reader) and
    give one label per source (classify) or one tag per word (tag)."""

    TRANSLATE = "translate"
    CLASSIFY = "classify"
    TAG = "tag"

    def __str__(self) -> str:
        """The plain name, as YAML, JSON and messages write it."""
        return self.value

    @property
    def sequence_targets(self) -> bool:
        """Whether its targets are a sequence (pieces or one tag per word), not one label."""
        return self is not Task.CLASSIFY
