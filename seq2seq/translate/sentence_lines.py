"""`s2s translate --sentences`: each line split into sentences, the sentences translated one by one
(`documents.BlockTranslator`, each line a block) and joined again with the spacing that stood between
them: one line out per line in. With `--markup`, a line's tags are put back over the whole line, so
an element may wrap words of two sentences; with `--alignments`, the links index the words of the
whole line and of its whole translation."""

from __future__ import annotations

from collections.abc import Sequence

from seq2seq.align.pharaoh import format_pharaoh
from seq2seq.markup.document import Block
from seq2seq.markup.marked import LineReader, MarkupError
from seq2seq.markup.parse import Dialect, read
from seq2seq.markup.place import Escape, escape_html
from seq2seq.translate.documents import BlockTranslator
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request


def _plain(word: str) -> str:
    return word


class SentenceLines:
    """Lines translated sentence by sentence by `blocks` (`LineTranslator`): the best translation
    of each, with its markup put back (`dialect`) and its word alignment after a tab (`alignments`)."""

    def __init__(self, blocks: BlockTranslator, dialect: Dialect | None, alignments: bool) -> None:
        self.blocks, self.dialect, self.alignments = blocks, dialect, alignments
        self.escape: Escape = escape_html if dialect is not None else _plain

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` per line, in order; a line whose markup is malformed is an error naming it."""
        assert prefixes is None, "--prefix is refused with --sentences"
        blocks = [self._block(line, first_line + n) for n, line in enumerate(lines)]
        out = []
        for placed in self.blocks.translate(blocks, request, self.escape):
            text = f"{placed.text}\t{format_pharaoh(placed.links)}" if self.alignments else placed.text
            out.append(Translation([text], [None]))
        return out

    def _block(self, line: str, number: int) -> Block:
        if self.dialect is None:
            reader = LineReader()
            reader.text(line)
        else:
            try:
                reader = read(line, self.dialect)
            except MarkupError as e:
                raise MarkupError(f"line {number}: {e} (--markup {self.dialect.name})") from None
        return Block(reader.finish(), line.strip(), tuple(reader.spaces), 0)
