"""The journal of a command's changes to a run (journal.json in RUN/.s2s-previous): how to undo them,
read by `seq2seq.run.change`, which writes it, and by every reader of the run (`check_not_replaced`).

It takes paths, not a `RunDir`: the run's layout reads it when it loads the run's config.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from seq2seq.errors import RunDirError

JOURNAL = "journal.json"


def read_journal(aside: Path) -> dict[str, Any] | None:
    """The journal in the aside folder `aside` (RUN/.s2s-previous), None when it has none."""
    path = aside / JOURNAL
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise RunDirError(
            f"{path} is unreadable ({e}); what an interrupted command set aside is in "
            f"{aside}: move out what you need and delete it"
        ) from None


def has_first_checkpoint(journal: dict[str, Any], last: Path, aside: Path) -> bool:
    """Whether the run's last.pt (`last`) was not there when the journaled change began: its first."""
    if not last.is_file():
        return False
    if journal["mode"] == "overwrite":  # RUN/checkpoints is the old run's until it is set aside
        moved = journal["moved"]
        return "checkpoints" not in moved or os.path.lexists(aside / "run" / "checkpoints")
    return "checkpoints/last.pt" not in journal["paths"]


def check_not_replaced(run: Path, aside: Path, last: Path) -> None:
    """A reader's check of the run `run`: refuse it while an `--overwrite` has its previous content
    set aside in `aside` and its new run has no checkpoint (`last`) yet."""
    journal = read_journal(aside)
    if (
        journal is not None
        and journal["mode"] == "overwrite"
        and not has_first_checkpoint(journal, last, aside)
    ):
        raise RunDirError(
            f"{run} is being replaced: `s2s train --overwrite` (pid {journal['pid']}) "
            f"set the previous run aside in {aside} and its new run has no checkpoint "
            "yet; if that command has stopped, the next `s2s train` or `s2s prepare` of this run "
            "directory puts the previous run back"
        )
