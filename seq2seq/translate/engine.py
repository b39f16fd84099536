"""What every translation engine offers: a run's `Translator` (s2s's own decoder) and a CTranslate2
export's `CT2Translator` (`seq2seq.ct2.runtime`). translate, evaluate, serve and pivoting receive an
engine already built (`seq2seq.commands.engines` chooses it) and use it through this interface only:
lines and a `Request` in, one `Translation` per line out. A call never changes the engine.

Both turn lines into translations through one front end (`front.LineFrontEnd`: blank lines, control
tokens, clipping, prefixes, detokenizing); each implements only its search (`front.Search`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from seq2seq.config import Config, Task
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.decoding.answers import Answers
from seq2seq.translate.attention import AttentionMap
from seq2seq.translate.front import LineFrontEnd, Search
from seq2seq.translate.lines import Translation
from seq2seq.translate.options import DecodeOptions, DecodeOverrides
from seq2seq.translate.request import Request
from seq2seq.translate.source_tokens import SourceTokens


class LineTranslator(Protocol):
    """What turns lines into translations: an engine, or an engine reached through a pivot."""

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` per line, in order; an empty line gives empty hypotheses. With
        `prefixes` (one per line, "" for none) each translation starts with its line's prefix.
        `first_line` numbers the lines in warnings (a line clipped to the model's positions)."""
        ...


class Engine(LineTranslator, Search, Protocol):
    """A `LineTranslator` with its run's config and tokenizers, that says what it runs on."""

    @property
    def front(self) -> LineFrontEnd:
        """The line front end its `translate` goes through, down to its `search_ids`."""

    @property
    def task(self) -> Task:
        """What the run was trained for: what messages name."""

    @property
    def answers(self) -> Answers[Any]:
        """How it answers its sources, and what else can be asked of it."""

    @property
    def config(self) -> Config: ...

    @property
    def tokenizers(self) -> TokenizerPair: ...

    @property
    def source_tokens(self) -> SourceTokens: ...

    @property
    def max_source_tokens(self) -> int: ...

    @property
    def calls_at_once(self) -> int:
        """Decode calls it runs well together (a server keeps this many in flight)."""

    @property
    def call_tokens(self) -> int | None:
        """Beam-expanded source tokens past which a larger call decodes no faster a line, or None
        (a server's calls stay within it: a short request waits less for a free call)."""

    @property
    def checkpoints(self) -> Sequence[Path]:
        """The files the weights came from."""

    def options(self, asked: DecodeOverrides = ...) -> DecodeOptions: ...

    def identity(self) -> dict[str, object]:
        """What decides its numbers besides the request (weights, how they run): a resumed output
        must find the same."""

    def describe(self) -> dict[str, object]:
        """What it is, for records and /info: `engine` (s2s or ctranslate2), `device`, `precision`
        (or CTranslate2's compute type), `quantize`, `shortlist`."""

    def attention_map(self, source: str, hypothesis: str, request: Request) -> AttentionMap:
        """Where the last decoder layer looks writing `hypothesis` for `source`, its source starting
        as `request` starts it (language and tag), as each engine finds it."""


def prefix_refusal(engine: Engine) -> str | None:
    """Why ENGINE cannot start each translation with a given target prefix, or None when it can."""
    if not engine.answers.takes_prefixes:
        return f"a {engine.task} run reads; it writes no translation to start"
    if engine.config.model.right_to_left:
        return "a right-to-left run writes each translation from its end: it cannot start it from a prefix"
    return None
