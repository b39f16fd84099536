"""The generated pages of the documentation site: the config reference (from the config dataclasses
and the comments beside their fields) and the command-line reference (from the typer app).

`hooks.py` adds both pages to `mkdocs build` and `mkdocs serve`; `python -m tools.docs DIR` writes
them into DIR, to read without building the site.
"""

from __future__ import annotations

from tools.docs.cli_reference import cli_reference
from tools.docs.config_reference import config_reference

PAGES = {"reference/config.md": config_reference, "reference/cli.md": cli_reference}
