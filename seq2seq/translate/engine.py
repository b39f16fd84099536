"""What every translation engine offers: a run's `Translator` and a CTranslate2 export's
`CT2Translator` (`seq2seq.ct2.engine`), which the server and the command line use alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import torch

from seq2seq.config import Config, Task
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.decoding.answers import Answers
from seq2seq.translate.attention import AttentionMap
from seq2seq.translate.options import DecodeOptions, DecodeOverrides
from seq2seq.translate.source_tokens import SourceTokens
from seq2seq.translate.streams import LineTranslator


class Engine(LineTranslator, Protocol):
    """A `LineTranslator` with its run's config and tokenizers, whose source tokens can be chosen,
    and that says what it runs on."""

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
    def source_prefix(self) -> tuple[int, ...]: ...

    @property
    def max_source_tokens(self) -> int: ...

    @property
    def checkpoints(self) -> Sequence[Path]:
        """The files the weights came from."""

    @property
    def device(self) -> torch.device | str:
        """Where it decodes (CTranslate2 names its device: "cpu", "cuda")."""

    @property
    def dtype(self) -> torch.dtype | None: ...

    @property
    def quantize(self) -> str | None: ...

    def use_source_tokens(self, to: str = "", tag: str = "") -> None: ...

    def options(self, asked: DecodeOverrides = ...) -> DecodeOptions: ...

    def identity(self) -> dict[str, object]: ...

    def attention_map(self, source: str, hypothesis: str) -> AttentionMap:
        """Where the last decoder layer looks writing `hypothesis` for `source`, as each engine finds it."""
