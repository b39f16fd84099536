"""Word alignments and inline markup around an engine: `s2s translate --alignments` and `--markup`.

A pure wrapper, as a pivot is. Each line is translated by the engine; then, for each hypothesis, the
engine's attention teacher-forced on it (`Engine.attention_map`: the head a run trained with guided
alignment, else its last layer's mean over heads) becomes word links (`seq2seq.align.pieces`): each
target word to the source word whose pieces it attends to most. Words are the whitespace-separated
tokens of the line as given (with markup: of its text without the tags) and of the translation.

With markup, a line's tags are taken out before it is translated and put back around the target
words aligned to the words they wrapped (`seq2seq.markup.place`); a line whose markup does not parse
is an error naming it. Each hypothesis costs one more forward pass for its attention.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from seq2seq.align import Pair
from seq2seq.align.pharaoh import format_pharaoh
from seq2seq.align.pieces import attention_to_pairs, word_of_piece
from seq2seq.data.textio import iter_line_chunks
from seq2seq.errors import Seq2SeqError
from seq2seq.markup.parse import Dialect, MarkedLine, MarkupError, parse
from seq2seq.markup.place import place
from seq2seq.translate.annotations import Annotations
from seq2seq.translate.engine import Engine
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request


class AnnotatedEngine:
    """ENGINE's translations with their word alignments, their markup put back, or both."""

    def __init__(self, engine: Engine, annotations: Annotations) -> None:
        if not engine.answers.draws_attention:
            raise Seq2SeqError(
                f"--alignments and --markup need a translation's attention: a {engine.task} run reads "
                "without one"
            )
        self.engine, self.annotations = engine, annotations

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` per line, in order (`LineTranslator`), each hypothesis annotated: its
        markup put back, its alignment after a tab."""
        marked, sources = self.read(lines, first_line)
        results = self.engine.translate(sources, request, first_line, prefixes)
        out = []
        for result, (texts, links) in zip(
            results, self.annotate(sources, marked, results, request), strict=True
        ):
            if self.annotations.alignments:
                texts = [f"{text}\t{format_pharaoh(pairs)}" for text, pairs in zip(texts, links, strict=True)]
            out.append(Translation(texts, result.scores))
        return out

    def read(self, lines: Sequence[str], first_line: int = 1) -> tuple[list[MarkedLine] | None, list[str]]:
        """The lines parsed (with markup; an error names a malformed line) and what the engine reads."""
        markup = self.annotations.dialect
        if markup is None:
            return None, list(lines)
        marked = [parsed_line(line, first_line + n, markup) for n, line in enumerate(lines)]
        return marked, [m.text for m in marked]

    def annotate(
        self,
        sources: Sequence[str],
        marked: Sequence[MarkedLine] | None,
        results: Sequence[Translation],
        request: Request,
        best_only: bool = False,
    ) -> list[tuple[list[str], list[list[Pair]]]]:
        """For each line, its hypotheses with the markup put back, and each one's word links (with
        `best_only` and no markup to place, the best one's alone: the others get none)."""
        out = []
        for n, (source, result) in enumerate(zip(sources, results, strict=True)):
            linked = result.texts[:1] if best_only and not marked else result.texts
            links = [self.word_links(source, text, request) for text in linked]
            links += [[] for _ in result.texts[len(linked) :]]
            texts = [
                place(marked[n], text, pairs) if marked else text
                for text, pairs in zip(result.texts, links, strict=True)
            ]
            out.append((texts, links))
        return out

    def word_links(self, source: str, translation: str, request: Request) -> list[Pair]:
        """(source word, target word) links of `translation`, from the engine's attention."""
        if not source.split() or not translation.split():
            return []
        found = self.engine.attention_map(source, translation, request)
        shift = len(self.engine.source_tokens.prefix(request.direction))
        src_words = word_of_piece(found.source[shift:-1])
        tgt_words = word_of_piece(found.target[:-1])
        links = attention_to_pairs(found.weights, src_words, tgt_words, shift)
        counts = len(source.split()), len(translation.split())  # the tokenizer's words are the line's
        return [(i, j) for i, j in links if i < counts[0] and j < counts[1]]


def parsed_line(line: str, number: int, dialect: Dialect) -> MarkedLine:
    """`parse`, its error naming the line."""
    try:
        return parse(line, dialect)
    except MarkupError as e:
        raise MarkupError(f"line {number}: {e} (--markup {dialect.name})") from None


def check_markup(path: Path, dialect: Dialect) -> None:
    """Every line of the input file parses: a command refused for a line's markup writes nothing."""
    number = 1
    for chunk in iter_line_chunks(path):
        for line in chunk:
            parsed_line(line, number, dialect)
            number += 1
