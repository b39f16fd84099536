"""Blocks of text with inline markup translated sentence by sentence, their tags put back: the work
of `s2s translate --format` (a document's blocks) and `--sentences` (each line a block).

Each block is split into sentences (`sentences.Sentences`); every sentence of every block goes to
the engine as a line of its own, in batches. A block's translation is its sentences' translations
in order, joined by the whitespace that stood between the sentences in the source (a line break
stays a line break); the words within a sentence are joined by single spaces. Each sentence's word
links (the engine's attention, `AnnotatedEngine.word_links`) become links between the block's words,
by which its tags are put back (`seq2seq.markup.place`), so that an element may wrap words of
several sentences. A block whose every sentence comes back unchanged (a name, a number, a code-like
cell) is written exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from seq2seq.align import Pair
from seq2seq.markup.document import Block, Document
from seq2seq.markup.place import Escape, place
from seq2seq.translate.engine import LineTranslator
from seq2seq.translate.request import Request
from seq2seq.translate.sentences import WordSpan

BATCH = 256  # sentences per engine call: a progress bar moves, and a long document is not one batch


class WordLinks(Protocol):
    """(source word, target word) links between a sentence and its translation."""

    def __call__(self, source: str, translation: str, request: Request) -> list[Pair]: ...


@dataclass(frozen=True)
class Placed:
    """A block's translation as text, and its word links (the block's words, from 0)."""

    text: str
    links: list[Pair]


@dataclass(frozen=True)
class BlockTranslator:
    """Blocks translated sentence by sentence by `lines`, their tags put back by `links`."""

    lines: LineTranslator
    links: WordLinks
    sentences: Callable[[Sequence[str]], list[WordSpan]]

    def translate(
        self,
        blocks: Sequence[Block],
        request: Request,
        escape: Escape,
        on_sentences: Callable[[int], object] = lambda _: None,
    ) -> list[Placed]:
        """Each block's translation, in order; `on_sentences` hears of each batch of sentences done."""
        plans = [self.sentences(block.line.words) for block in blocks]
        sources = [
            " ".join(block.line.words[a:b])
            for block, plan in zip(blocks, plans, strict=True)
            for a, b in plan
        ]
        targets = iter(self._translated(sources, request, on_sentences))
        out = []
        for block, plan in zip(blocks, plans, strict=True):
            pairs = [(" ".join(block.line.words[a:b]), next(targets)) for a, b in plan]
            out.append(self._placed(block, plan, pairs, request, escape))
        return out

    def document(
        self, document: Document, request: Request, on_sentences: Callable[[int], object] = lambda _: None
    ) -> str:
        """`document` with every block translated, everything else as it was."""
        placed = self.translate(document.blocks, request, document.escape, on_sentences)
        return document.written([p.text for p in placed])

    def _translated(
        self, sources: list[str], request: Request, on_sentences: Callable[[int], object]
    ) -> Iterator[str]:
        for first in range(0, len(sources), BATCH):
            batch = sources[first : first + BATCH]
            results = self.lines.translate(batch, request, first + 1)
            on_sentences(len(batch))  # before the texts: the last batch's are read to the end, no further
            yield from (result.texts[0] for result in results)

    def _placed(
        self,
        block: Block,
        plan: list[WordSpan],
        pairs: list[tuple[str, str]],
        request: Request,
        escape: Escape,
    ) -> Placed:
        """One block's translation from its sentences' (source, translation) pairs."""
        if all(source == target for source, target in pairs):
            return Placed(block.raw, [(i, i) for i in range(len(block.line.words))])
        words: list[str] = []
        links: list[Pair] = []
        spaces: dict[int, str] = {}
        for (start, _), (source, target) in zip(plan, pairs, strict=True):
            if words and start:
                spaces[len(words)] = block.spaces[start - 1]  # what stood between the sentences
            links += [(start + i, len(words) + j) for i, j in self.links(source, target, request)]
            words += target.split()
        return Placed(place(block.line, " ".join(words), links, escape=escape, spaces=spaces), links)
