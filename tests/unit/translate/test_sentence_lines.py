"""`--sentences`: each line's sentences go to the model one by one and come back joined on one line,
with the spacing between them, their markup put back over the line, their links indexing the line."""

from __future__ import annotations

from seq2seq.markup.parse import HTML
from seq2seq.translate.documents import BlockTranslator
from seq2seq.translate.sentence_lines import SentenceLines
from seq2seq.translate.sentences import Sentences
from tests.unit.translate.test_documents import REQUEST, reverse, upper


def test_each_sentence_is_translated_alone_and_the_line_joined_again():
    model = upper()
    lines = SentenceLines(BlockTranslator(model, model.links, Sentences("en")), None, False)
    out = lines.translate(["One two.  Three four? Five.", "", "Six"], REQUEST)
    assert model.seen == ["One two.", "Three four?", "Five.", "Six"]
    assert [t.texts for t in out] == [["ONE TWO.  THREE FOUR? FIVE."], [""], ["SIX"]]


def test_markup_spans_sentences_and_links_index_the_whole_line():
    model = reverse()
    lines = SentenceLines(BlockTranslator(model, model.links, Sentences("en")), HTML, True)
    (out,) = lines.translate(["One <b>two. Three</b> four."], REQUEST)
    # <b> wraps a word of each sentence: one span, from the first to the last target word it links to
    assert out.texts == ["<b>two. One four. Three</b>\t0-1 1-0 2-3 3-2"]
