"""How `s2s serve` answers, as its command line asks: decode settings, batching, request limits.

Plain values, free of the server packages (an extra): the command line is built from them before
those are known to be installed."""

from __future__ import annotations

from dataclasses import dataclass

from seq2seq.config.bounds import MAX_BEAM, MAX_BODY_BYTES, MAX_SECONDS, MAX_SERVE_CHARS, MAX_SERVE_LINES
from seq2seq.flags import group, option
from seq2seq.translate.direction import STRAIGHT, Direction
from seq2seq.translate.options import RERANKING, RUN_DEFAULTS, SEARCH_ONLY, DecodeOverrides
from seq2seq.translate.placement import ENGINE


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; each limit has its own command-line option."""

    max_lines: int = option(100, "Lines per request.", between=(1, MAX_SERVE_LINES))
    max_chars: int = option(1000, "Characters per line.", between=(1, MAX_SERVE_CHARS))
    max_body_bytes: int = option(
        1 << 20, "Bytes per request body.", between=(1, MAX_BODY_BYTES), why="held in memory whole"
    )
    timeout_s: float = option(  # waiting in the queue and decoding
        60.0,
        "Seconds a request may wait and decode before it gets 408.",
        "--timeout",
        between=(0.001, MAX_SECONDS),
        why="a day at most",
    )
    max_beam: int = option(  # largest beam (and n-best) a client may ask for
        16, "Largest beam or n-best a request may ask for.", between=(1, MAX_BEAM)
    )


@dataclass(frozen=True)
class ServerSettings:
    """How `s2s serve` decodes: the command line's decode options, the batching window, the limits."""

    # over the run's decode config; a request may ask for another beam and n-best
    asked: DecodeOverrides = group(RUN_DEFAULTS, omit=(*SEARCH_ONLY, *RERANKING))
    batch_window_ms: float = option(  # how long the batcher waits for more requests before decoding
        5.0,
        "--batching static: decode once no request came for this long (10 such windows at most).",
        between=(0.0, MAX_SECONDS * 1000),
        why="a time in milliseconds",
    )
    limits: Limits = group(Limits())
    cors_origins: tuple[str, ...] = option(  # none: CORS off
        (), "Let pages from this origin call the API (repeat; * = any) [default: none].", "--cors-origin"
    )
    # a multilingual run: the target language of requests that name none (--to)
    direction: Direction = group(STRAIGHT, only=("to",))
    engine: str = ENGINE()  # which engine decodes (`seq2seq.commands.engines`)
    batching: str = option(  # continuous, static, or auto: continuous where the run allows
        "auto",
        "continuous (requests join the running decode at its next step), static (requests that arrive "
        "together decode together), or auto: continuous where the run allows (an s2s encoder-decoder "
        "translation run), else static.",
    )

    @property
    def window_s(self) -> float:
        return self.batch_window_ms / 1000
