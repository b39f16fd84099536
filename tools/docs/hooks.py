"""MkDocs hook (`hooks:` in mkdocs.yml): the reference pages are generated at every build from the
code they describe, so they cannot fall behind it. Nothing here reaches the network: it imports s2s's
config and command-line modules and reads their source."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the repository, which `mkdocs` does not put on sys.path


def on_files(files: Any, config: Any) -> Any:
    """Put each generated page (mkdocs's `File.generated`) in place of its committed stub, which says
    where the page comes from to whoever opens it outside the site."""
    from mkdocs.structure.files import File

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tools.docs import PAGES

    for name, make in PAGES.items():
        stub = files.get_file_from_path(name)
        if stub is not None:
            files.remove(stub)
        files.append(File.generated(config, name, content=make()))
    return files
