"""`s2s export`, `s2s import` and `s2s serve`: a trained run shipped to another engine, another
toolkit's model made a run, or a run served over HTTP."""

from __future__ import annotations

import logging
from typing import Annotated

from typer import Option

from seq2seq.cli.common import Verbose, setup_logging, verbosity
from seq2seq.cli.expansion import verb
from seq2seq.cli.group import commands
from seq2seq.commands.jobs import ExportJob, ImportJob, ServeJob
from seq2seq.errors import Seq2SeqError

app = commands()

FormerTo = Annotated[
    str | None, Option("--to", hidden=True, help="Former spelling of --format (refused, with advice).")
]


@verb(app)
def export(job: ExportJob, verbose: Verbose = False, to: FormerTo = None) -> None:
    """Export a run to CTranslate2 (to ship it: translate, evaluate and serve make their own on first
    use) or Hugging Face transformers (pip install 's2s\\[hf]')."""
    from seq2seq.commands.export import export as run_export

    if to is not None:
        raise Seq2SeqError(
            f"s2s export names its format with --format {to} (--to names a target language, in "
            "translate, evaluate, score and serve)"
        )
    verbosity(verbose)
    print(run_export(job))


@verb(app, name="import")
def import_model(job: ImportJob, verbose: Verbose = False) -> None:
    """Make a run of a public MarianMT model (an OPUS-MT model, downloaded beforehand: s2s downloads
    nothing), to translate with, evaluate, export or fine-tune (train.init_from)."""
    from seq2seq.commands.import_model import import_model as run_import

    verbosity(verbose)
    print(run_import(job))


@verb(app)
def serve(job: ServeJob) -> None:
    """Serve RUN_DIR (or a CTranslate2 export of one) over HTTP: a JSON API and a page
    at /, batching concurrent requests together."""
    from seq2seq.commands.serve import serve as run_serve

    setup_logging(logging.INFO)
    run_serve(job)
