"""What every translation engine offers: a run's `Translator` and a CTranslate2 export's
`CT2Translator` (`seq2seq.ct2.engine`), which the server and the command line use alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import torch

from seq2seq.config import Config
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.translate.options import DecodeOptions, DecodeOverrides
from seq2seq.translate.starts import SourceStart
from seq2seq.translate.streams import LineTranslator


class Engine(LineTranslator, Protocol):
    """A `LineTranslator` with its run's config and tokenizers, whose sources' start can be chosen,
    and that says what it runs on."""

    @property
    def task(self) -> str:
        """translate, or a reader's classify or tag."""

    @property
    def config(self) -> Config: ...

    @property
    def tokenizers(self) -> TokenizerPair: ...

    @property
    def starts(self) -> SourceStart: ...

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

    def start_sources(self, to: str = "", tag: str = "") -> None: ...

    def options(self, asked: DecodeOverrides = ...) -> DecodeOptions: ...

    def identity(self) -> dict[str, object]: ...
