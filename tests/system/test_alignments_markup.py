"""`s2s translate --alignments` and `--markup`: one output line per input line, alignments that index
the words of the line as given and of its translation, and markup that comes back well-formed with
every tag, attribute and entity byte for byte, around a translation equal to that of the plain text."""

from __future__ import annotations

from collections import Counter

import pytest

from seq2seq.align.pharaoh import parse_pharaoh
from seq2seq.markup.parse import HTML, XML, parse
from tests.helpers import cli_translate, run_cli

pytestmark = pytest.mark.slow

ENGINES = ["s2s", "ctranslate2"]
LINES = ["cat dog bird", "", "the quick   dog", "bird", "dog cat dog cat bird fish"]
MARKED = [
    "<b>cat</b> dog <a href=\"x.html?a=1&amp;b=2\" title='t'>bird</a>",
    "",
    "cat &amp; <i>dog</i><br/>",
    "<p>dog <b>cat <i>bird</i></b> fish</p>",
    "<!-- note --> &lt;cat&gt;",
]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_line_gets_its_translation_and_links_between_their_words(tiny_run, engine):
    plain = cli_translate(tiny_run.run, LINES, "--engine", engine)
    aligned = cli_translate(tiny_run.run, LINES, "--engine", engine, "--alignments")
    assert len(aligned) == len(LINES)
    for line, translation, out in zip(LINES, plain, aligned, strict=True):
        text, links = out.split("\t")
        assert text == translation  # the translation is what it is without alignments
        pairs = parse_pharaoh(links, len(line.split()), len(text.split()))
        # plain attention links each target word to one source word
        assert sorted(j for _, j in pairs) == (list(range(len(text.split()))) if line.split() else [])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dialect", [HTML, XML])
def test_markup_comes_back_whole_around_the_translation_of_the_plain_text(tiny_run, engine, dialect):
    parsed = [parse(line, dialect) for line in MARKED]
    plain = cli_translate(tiny_run.run, [p.text for p in parsed], "--engine", engine)
    marked = cli_translate(tiny_run.run, MARKED, "--engine", engine, "--markup", dialect.name)
    assert len(marked) == len(MARKED)
    for source, translation, out in zip(parsed, plain, marked, strict=True):
        again = parse(out, dialect)  # well-formed
        assert again.words == tuple(translation.split())
        raw = Counter((t.opening, t.closing) for t in source.tags)
        assert Counter((t.opening, t.closing) for t in again.tags) == raw  # byte for byte, each once
    assert 'href="x.html?a=1&amp;b=2"' in marked[0] and "title='t'" in marked[0]


def test_malformed_markup_is_refused_naming_the_line_and_nothing_is_written(tiny_run, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("<b>cat</b>\ndog <i>bird\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    result = run_cli("translate", str(tiny_run.run), "-i", str(source), "-o", str(out), "--markup", "xml")
    assert result.exit_code == 2, result.output
    assert "error: line 2:" in result.output and "<i>" in result.output
    assert "Traceback" not in result.output and not out.exists()
    assert list(tmp_path.iterdir()) == [source]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--markup", "markdown"], "choose one of html, xml"),
        (["--alignments", "--pivot", "en"], "leave --pivot out"),
    ],
)
def test_what_cannot_be_done_is_refused(tiny_run, args, says):
    result = run_cli("translate", str(tiny_run.run), *args, input="cat\n")
    assert result.exit_code == 2 and says in result.output, result.output
