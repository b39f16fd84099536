"""The `s2s` command line: its commands gathered from the modules that declare them. Run by the
`s2s` script and `python -m seq2seq`."""

from __future__ import annotations

from seq2seq.cli import caching, decoding, deployment, pipeline, training
from seq2seq.cli.common import Version
from seq2seq.cli.group import commands

app = commands(no_args_is_help=True)
for verbs in (training.app, decoding.app, deployment.app, pipeline.app):
    app.add_typer(verbs)
app.add_typer(caching.app, name="cache")


@app.callback()
def options(version: Version = False) -> None:
    """Train and use Transformers: translators (encoder-decoder, decoder-only), readers (classify, tag)."""


def main() -> None:
    app()
