"""The line front end both engines share: lines and a `Request` in, one `Translation` per line out.

Blank lines stay blank and are not searched; every other source gets the control ids the request
asks for (language, tag: `SourceTokens`) and is clipped to the model's positions; target prefixes
become ids that leave room for an <eos>; the hypotheses found become text, best first. Below it, an
engine implements only its search (`Search`): source ids, settings and prefix ids in, each source's
n-best out. Free of torch: a command that decodes with CTranslate2 never loads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.settings import SearchSettings
from seq2seq.translate.lines import Translation, blank_translations, clip_sources, target_prefixes
from seq2seq.translate.request import Request
from seq2seq.translate.source_tokens import SourceTokens


class Search(Protocol):
    """What an engine implements below the front end."""

    def search_ids(
        self,
        sources: list[list[int]],
        settings: SearchSettings,
        max_tokens: int,
        scores: bool,
        prefixes: list[list[int]] | None,
    ) -> list[list[Hypothesis]]:
        """Each source's n-best (target ids without <bos>/<eos>, scored by `hypothesis`' rule), best
        first; each hypothesis starts with its source's prefix when `prefixes` gives one (empty: none).
        `sources` hold ids without <eos>, within the positions; `max_tokens` is the batch budget in
        source tokens; `scores` False allows a greedy search to leave its scores out (NaN)."""
        ...


@dataclass(frozen=True)
class LineFrontEnd:
    """An engine's tokenizers, the control ids it puts before sources, and its longest source."""

    tokenizers: TokenizerPair
    source_tokens: SourceTokens
    max_source_tokens: int

    def translate(
        self,
        search: Search,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` per line, in order, the non-blank ones searched by `search`
        (`LineTranslator.translate`)."""
        todo, sources, forced = self.inputs(lines, request, first_line, prefixes)
        settings = request.search
        found = (
            search.search_ids(sources, settings, request.max_tokens, request.scores, forced) if todo else []
        )
        return self.translations(
            len(lines), settings.nbest, dict(zip(todo, found, strict=True)), request.keep_unk
        )

    def inputs(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> tuple[list[int], list[list[int]], list[list[int]] | None]:
        """What is searched: the indices of the non-blank lines, their source ids (the control ids of
        `request` first, clipped to the positions, without <eos>) and, with `prefixes`, their target
        prefix ids. `first_line` numbers the lines in the warning of a clipped one."""
        todo = [i for i, line in enumerate(lines) if line.strip()]
        start = self.source_tokens.prefix(request.direction)
        sources = [[*start, *ids] for ids in self.tokenizers.src.encode([lines[i] for i in todo])]
        clip_sources(sources, self.max_source_tokens, [first_line + i for i in todo])
        forced = None
        if prefixes is not None:
            tgt = self.tokenizers.tgt_tokenizer
            forced = target_prefixes(tgt, [prefixes[i] for i in todo], self.max_source_tokens)
        return todo, sources, forced

    def translations(
        self, count: int, nbest: int, found: Mapping[int, list[Hypothesis]], keep_unk: bool = False
    ) -> list[Translation]:
        """One `Translation` per line of `count`, from the hypotheses of the lines searched (`found`:
        by line index; the others were blank). `<unk>` pieces are dropped, or shown as ` ⁇ ` with
        `keep_unk`."""
        out = blank_translations(count, nbest)
        # one call for every hypothesis: SentencePiece starts its threads once, not once a line
        texts = iter(
            self.tokenizers.decode_written([h.tokens for hyps in found.values() for h in hyps], keep_unk)
        )
        for i, hyps in found.items():
            out[i] = Translation.scored([next(texts) for _ in hyps], [h.score for h in hyps])
        return out
