"""`s2s translate --format html|markdown` on the tiny run: one document in, the same document out,
every sentence the translation that line mode gives it, everything else byte for byte; a malformed
or misused document is refused with `error:` and exit code 2, writing nothing."""

from __future__ import annotations

import pytest

from seq2seq.markup.formats import FORMATS
from tests.helpers import cli_translate, run_cli

pytestmark = pytest.mark.slow

HTML = """<!DOCTYPE html>
<html><head><title>cat dog</title>
<script>var words = "cat dog bird";</script></head>
<body>
<!-- the pets -->
<ul><li>cat <b>dog</b> bird<li>bird tree</ul>
<p>dog cat. <a href="cat.html">red bird</a> cat.
<pre>cat dog</pre>
</body></html>
"""
MARKDOWN = """# cat dog

bird `cat` house [dog cat](https://example.org/cat "cat") bird.

- cat dog
- tree

```
cat dog bird
```
"""


def translated(tiny_run, tmp_path, text: str, kind: str) -> str:
    source, out = tmp_path / f"in.{kind}", tmp_path / f"out.{kind}"
    source.write_text(text, encoding="utf-8")
    result = run_cli(
        "translate", str(tiny_run.run), "--device", "cpu", "-i", str(source), "-o", str(out), "--format", kind
    )
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8")


def between(text: str, kept: list[str]) -> list[str]:
    """What lies between the kept pieces of `text`, each found in order after the one before."""
    found, at = [], 0
    for piece in kept:
        where = text.index(piece, at)
        found.append(text[at:where])
        at = where + len(piece)
    return found[1:]


@pytest.mark.parametrize(("text", "kind"), [(HTML, "html"), (MARKDOWN, "markdown")])
def test_a_document_comes_back_with_each_block_translated_and_the_rest_as_it_was(
    tiny_run, tmp_path, text, kind
):
    out = translated(tiny_run, tmp_path, text, kind)
    source = FORMATS[kind].read(text)
    blocks = between(out, [piece for piece in source.pieces if isinstance(piece, str) and piece])  # in order
    assert len(blocks) == len(source.blocks)
    # each block's words are the plain translations of its sentences, one line each
    sentences = [s for block in source.blocks for s in block.line.text.replace(". ", ".\n").split("\n")]
    words = [w for block in blocks for b in FORMATS[kind].read(block).blocks for w in b.line.words]
    assert words == " ".join(cli_translate(tiny_run.run, sentences)).split()


def test_the_markup_of_a_block_survives(tiny_run, tmp_path):
    out = translated(tiny_run, tmp_path, HTML, "html")
    for kept in [
        '<a href="cat.html">',
        "</a>",
        "<b>",
        "</b>",
        'var words = "cat dog bird";',
        "<pre>cat dog</pre>",
    ]:
        assert kept in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--format", "xml"], "line 1, column 16: mismatched tag"),
        (["--format", "html", "--markup", "html"], "leave out --markup"),
        (["--format", "pdf"], "choose one of html, xml, markdown, text"),
    ],
)
def test_a_refused_document_writes_nothing(tiny_run, tmp_path, args, says):
    source, out = tmp_path / "in.xml", tmp_path / "out.xml"
    source.write_text("<a>cat <b>dog</a>\n", encoding="utf-8")
    result = run_cli("translate", str(tiny_run.run), "-i", str(source), "-o", str(out), *args)
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output, result.output
    assert sorted(tmp_path.iterdir()) == [source]


def test_sentences_in_line_mode_give_one_line_per_line_of_each_sentence_translated(tiny_run):
    lines = ["cat dog. bird cat.", "", "the big house"]
    out = cli_translate(tiny_run.run, lines, "--sentences")
    plain = cli_translate(tiny_run.run, ["cat dog.", "bird cat.", "the big house"])
    assert out == [" ".join(t for t in plain[:2] if t), "", plain[2]]


def test_a_document_from_stdin_goes_to_stdout_and_one_not_utf8_is_refused(tiny_run, tmp_path):
    result = run_cli("translate", str(tiny_run.run), "--format", "markdown", input=MARKDOWN)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# ") and "```\ncat dog bird\n```\n" in result.stdout
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_bytes("Grüße, cat.\n".encode("latin-1"))
    result = run_cli("translate", str(tiny_run.run), "-i", str(source), "-o", str(out), "--format", "text")
    assert result.exit_code == 2 and "line 1 is not valid UTF-8" in result.output, result.output
    assert not out.exists()
