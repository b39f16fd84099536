"""Documents translated block by block, sentence by sentence, through a fake engine: with an identity
model a document comes back byte for byte; with a model that reverses or uppercases each sentence,
every tag, code span, link target and block survives, the output reads as the same kind of document,
and what is never translated (scripts, styles, code) never reaches the model."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from seq2seq.decoding.settings import SearchSettings
from seq2seq.markup.formats import FORMATS
from seq2seq.markup.tree import OTHER, Node, html_tree, xml_tree
from seq2seq.translate.documents import BlockTranslator
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request
from seq2seq.translate.sentences import Sentences, whole

DOCUMENTS = Path(__file__).parents[2] / "fixtures" / "documents"
CORPUS = {"article.html": "html", "manual.xml": "xml", "README.md": "markdown", "guide.md": "markdown"}
CORPUS |= {"notes.txt": "text"}
REQUEST = Request(SearchSettings(beam=1), 100)


class Model:
    """A line translator that changes each line's words by `change`, and says which word went where."""

    def __init__(self, change: Callable[[list[str]], list[str]], reverses: bool = False) -> None:
        self.change, self.reverses = change, reverses
        self.seen: list[str] = []

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        self.seen += lines
        return [Translation([" ".join(self.change(line.split()))], [0.0]) for line in lines]

    def links(self, source: str, translation: str, request: Request) -> list[tuple[int, int]]:
        m, n = len(source.split()), len(translation.split())
        return [(i, n - 1 - i if self.reverses else i) for i in range(min(m, n))]


def identity() -> Model:
    return Model(lambda words: words)


def reverse() -> Model:
    return Model(lambda words: words[::-1], reverses=True)


def upper() -> Model:
    return Model(lambda words: [w.upper() for w in words])


GERMAN = Sentences("de")


def translated(name: str, model: Model, split: Callable = GERMAN) -> str:
    text = (DOCUMENTS / name).read_text(encoding="utf-8")
    document = FORMATS[CORPUS[name]].read(text)
    return BlockTranslator(model, model.links, split).document(document, REQUEST)


@pytest.mark.parametrize("name", CORPUS)
def test_an_identity_model_gives_the_document_back_byte_for_byte(name: str):
    assert translated(name, identity()) == (DOCUMENTS / name).read_text(encoding="utf-8")


def tags(tree: Node, text: str) -> Counter[str]:
    """Every tag of a tree (start tags, end tags, comments and the like), byte for byte, counted."""
    found: Counter[str] = Counter()
    for node in tree.children:
        if node.element:
            found.update([text[node.start : node.inner], text[node.close : node.end]])
            found += tags(node, text)
        elif node.name == OTHER:
            found[text[node.start : node.end]] += 1
    return found


def kept_elements(tree: Node, text: str, names: set[str]) -> list[str]:
    out = []
    for node in tree.children:
        if node.element and node.name in names:
            out.append(text[node.start : node.end])
        else:
            out += kept_elements(node, text, names)
    return out


@pytest.mark.parametrize("model", [reverse, upper])
@pytest.mark.parametrize(("name", "tree"), [("article.html", html_tree), ("manual.xml", xml_tree)])
def test_every_tag_survives_and_what_is_kept_is_kept_verbatim(name: str, tree: Callable, model: Callable):
    source = (DOCUMENTS / name).read_text(encoding="utf-8")
    out = translated(name, model())
    assert out != source
    before, after = tree(source), tree(out)  # xml: still well formed
    assert tags(after, out) == tags(before, source)
    kept = {"script", "style", "pre", "code", "textarea", "programlisting", "command"}
    assert kept_elements(after, out, kept) == kept_elements(before, source, kept)
    assert len(FORMATS[CORPUS[name]].read(out).blocks) == len(FORMATS[CORPUS[name]].read(source).blocks)


def test_script_style_and_code_never_reach_the_model():
    model = reverse()
    translated("article.html", model)
    seen = " ".join(model.seen)
    for never in ["Der Text hier bleibt", "innerWidth", "margin", "Mo-Fr", "EUR 9,90", "GmbH", "Kommentar"]:
        assert never not in seen
    assert "Die Stadt am Fluss" in seen and "Museum" in seen


def test_a_reversed_html_paragraph_keeps_its_tags_around_their_words():
    out = translated("article.html", reverse())
    assert '<p>Tag. ganzen den gilt <span translate="no">EUR 9,90</span> und kostet Ticket Ein\n' in out
    assert (
        '<p><a href="https://example.org/zeiten?lang=de&amp;tag=1" title="Zeiten">Museums. des Webseite</a>'
        in out
    )
    assert "<title>Reiseberichte – Fluss am Stadt Die</title>" in out
    assert '<a href="/reisen/" class="active">Reisen</a>' in out


def markdown_shape(text: str) -> list[tuple[str, ...]]:
    """What a Markdown document is besides its words: its blocks, code, link targets, images."""
    shape = []
    for token in MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text):
        if token.type != "inline":
            shape.append((token.type, token.tag, token.info, token.content if not token.children else ""))
            continue
        for child in token.children or []:
            if child.type in ("code_inline", "image", "html_inline") or child.type.startswith("link_"):
                shape.append((child.type, child.content, str(child.attrs)))
            elif child.type.endswith(("_open", "_close")) or child.type == "hardbreak":
                shape.append((child.type, child.markup))
    return shape


@pytest.mark.parametrize("model", [reverse, upper])
@pytest.mark.parametrize("name", ["README.md", "guide.md"])
def test_markdown_keeps_its_blocks_code_and_link_targets(name: str, model: Callable):
    source = (DOCUMENTS / name).read_text(encoding="utf-8")
    out = translated(name, model())
    assert out != source
    shape, again = markdown_shape(source), markdown_shape(out)
    assert Counter(again) == Counter(shape)
    assert [s for s in again if s[0] != "text"][:5] == [s for s in shape if s[0] != "text"][:5]


def test_markdown_words_that_would_be_markup_are_escaped():
    model = Model(lambda words: ["#", "#x", "*a*", "[b]", "1.", "-", "a|b", "x_y", "3.5", ">q", "<b>"])
    out = BlockTranslator(model, model.links, whole).document(FORMATS["markdown"].read("x y\n"), REQUEST)
    assert out == "\\# #x \\*a\\* \\[b\\] 1\\. \\- a\\|b x\\_y 3.5 \\>q \\<b>\n"
    blocks = [t.type for t in MarkdownIt("commonmark").parse(out)]
    assert blocks == ["paragraph_open", "inline", "paragraph_close"]


def test_code_kept_in_a_block_clings_to_punctuation_and_to_the_marks_around_it():
    model = upper()
    text = "Siehe (`a`), dann **`b`** oder `c`: fertig.\n"
    out = BlockTranslator(model, model.links, whole).document(FORMATS["markdown"].read(text), REQUEST)
    assert out == "SIEHE (`a`), DANN **`b`** ODER `c`: FERTIG.\n"


def test_sentences_go_to_the_model_one_by_one_and_keep_their_spacing():
    model = upper()
    text = "<p>Erster Satz.  Zweiter <b>Satz. Dritter</b>\n  Satz?</p>"
    out = BlockTranslator(model, model.links, Sentences("de")).document(FORMATS["html"].read(text), REQUEST)
    assert model.seen == ["Erster Satz.", "Zweiter Satz.", "Dritter Satz?"]
    assert out == "<p>ERSTER SATZ.  ZWEITER <b>SATZ. DRITTER</b> SATZ?</p>"


def test_a_plain_text_document_keeps_its_line_breaks_between_sentences():
    model = upper()
    out = BlockTranslator(model, model.links, Sentences("de")).document(
        FORMATS["text"].read("Eins.\nZwei drei.\n\n  Vier.  \n"), REQUEST
    )
    assert out == "EINS.\nZWEI DREI.\n\n  VIER.  \n"


def test_the_progress_hears_of_every_sentence_sent_to_the_model():
    model = identity()
    text = "<p>Eins. Zwei.</p><p>Drei.</p>" * 200  # 600 sentences: more than one engine call
    heard: list[int] = []
    BlockTranslator(model, model.links, Sentences("de")).document(
        FORMATS["html"].read(text), REQUEST, heard.append
    )
    assert sum(heard) == 600 and len(heard) > 1
