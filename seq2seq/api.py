"""The HTTP API of `s2s serve` (FastAPI): the page, /translate, /attention, /info, /health.

Every error is JSON `{"error": "..."}` with a 4xx status that says what to change: 400 a body that is
not JSON (or not UTF-8), 413 too large (body, lines, characters), 422 a field that is missing, of the
wrong type, unknown or out of range, 408 no answer within the timeout. The model is used only by the
batcher's worker thread; handlers wait on its futures, so the event loop never blocks on decoding.
No endpoint reads a file a client names: the page is read once, from the package, at start-up.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

import seq2seq
from seq2seq.batcher import Batcher
from seq2seq.config import Config
from seq2seq.decoding import SearchSettings
from seq2seq.model import build_model
from seq2seq.report import attention_map
from seq2seq.translate import Translator

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# the page may run its own inline script and style and talk to this server, and nothing else
PAGE_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'"
)

NOT_JSON = "the body is not valid JSON in UTF-8"
NOT_OBJECT = 'send a JSON object ({"text": [...]}) with the header Content-Type: application/json'


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; each limit has its own command-line option."""

    max_lines: int = 100  # lines per /translate request
    max_chars: int = 1000  # characters per line
    max_body_bytes: int = 1 << 20
    timeout_s: float = 60.0  # waiting in the queue and decoding
    max_beam: int = 16  # largest beam (and n-best) a client may ask for


@dataclass(frozen=True)
class ServerSettings:
    """How `s2s serve` decodes: default search settings, batching window and token budget."""

    search: SearchSettings  # the run's decode config with the command line's overrides
    max_tokens: int  # beam-expanded source tokens per decode call
    window_s: float  # how long the batcher waits for more requests before decoding
    limits: Limits = Limits()
    cors_origins: tuple[str, ...] = ()  # origins whose pages may call the API (none: CORS off)


class ApiError(Exception):
    """A request the server refuses: an HTTP status and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: list[str] = Field(description="Source lines; one translation comes back per line, in order.")
    beam: int | None = Field(None, ge=1, description="Beam size (1 = greedy); default: the server's.")
    nbest: int = Field(1, ge=1, description="Hypotheses per line, best first, with their scores.")
    scores: bool = Field(False, description="Also return the score of each best translation.")


class Hypothesis(BaseModel):
    text: str
    score: float


class TranslateResponse(BaseModel):
    translations: list[str]  # the best translation of each line ("" for an empty line)
    scores: list[float] | None = None  # with "scores": true
    nbest: list[list[Hypothesis]] | None = None  # with "nbest" > 1


class AttentionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str = Field(description="One source sentence.")
    translation: str | None = Field(None, description="Its translation; default: the server's.")


class AttentionResponse(BaseModel):
    translation: str
    source: list[str]  # source pieces, then </s>
    target: list[str]  # target pieces, then </s>
    weights: list[list[float]]  # (target, source): where the last decoder layer looks, rows sum to 1


def create_app(
    translator: Translator, settings: ServerSettings, run_name: str, decode_thread: bool = True
) -> FastAPI:
    """The application; its batcher is `app.state.batcher`, drained when the app shuts down.

    With `decode_thread`, the app's start-up starts the batcher on a thread of its own; without it,
    the caller runs `app.state.batcher.run()` on the thread that loaded the model (`serve.run`).
    """
    limits = settings.limits
    batcher = Batcher(translator, settings.window_s, settings.max_tokens)
    info = server_info(translator, settings, run_name)
    page = resources.files(seq2seq).joinpath("static/index.html").read_text(encoding="utf-8")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if decode_thread:
            batcher.start()
        yield
        await asyncio.to_thread(batcher.close)

    app = FastAPI(title=f"s2s serve: {run_name}", version=seq2seq.__version__, lifespan=lifespan)
    app.state.batcher = batcher
    add_error_handlers(app)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type"],
        )
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)

    pending = 0  # requests waiting for the model: handlers run on one event loop, so no lock

    async def answer(future: Future) -> Any:
        nonlocal pending
        pending += 1
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), limits.timeout_s)
        except asyncio.TimeoutError:
            raise ApiError(
                408,
                f"no answer within {limits.timeout_s:g} s (the server's --timeout): it is busy or the "
                "request is large; try again, or send fewer lines",
            ) from None
        finally:
            pending -= 1

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_POLICY})

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Whether the server answers; requests waiting for an answer, and those not yet decoding."""
        return {"status": "ok", "requests": pending, "queued": batcher.waiting}

    @app.get("/info")
    async def get_info() -> dict[str, Any]:
        """The run, checkpoints, model size, languages, decode defaults, limits and versions."""
        return info

    @app.post("/translate", response_model=TranslateResponse, response_model_exclude_none=True)
    async def translate(request: TranslateRequest) -> TranslateResponse:
        """Translate lines: one translation per line, in order; an empty line gives ""."""
        search = request_settings(settings.search, request.beam, request.nbest, limits)
        check_lines(request.text, limits)
        results = await answer(batcher.translate(request.text, search))
        return TranslateResponse(
            translations=[r.texts[0] for r in results],
            scores=[r.scores[0] for r in results] if request.scores else None,
            nbest=[[Hypothesis(text=t, score=s) for t, s in zip(r.texts, r.scores)] for r in results]
            if request.nbest > 1
            else None,
        )

    @app.post("/attention", response_model=AttentionResponse)
    async def attention(request: AttentionRequest) -> AttentionResponse:
        """Cross-attention of one sentence (last decoder layer, mean over heads), teacher-forced on
        its translation."""
        check_lines([request.text], limits, field="text")
        if not request.text.strip():
            raise ApiError(422, "text: give a sentence to draw the attention of")
        translation = request.translation
        if translation is None:
            search = dataclasses.replace(settings.search, nbest=1)
            translation = (await answer(batcher.translate([request.text], search)))[0].texts[0]
        else:
            check_lines([translation], limits, field="translation")
        found = await answer(batcher.call(lambda: attention_map(translator, request.text, translation)))
        return AttentionResponse(
            translation=translation,
            source=found.source,
            target=found.target,
            weights=[[round(w, 4) for w in row] for row in found.weights.tolist()],
        )

    return app


def request_settings(base: SearchSettings, beam: int | None, nbest: int, limits: Limits) -> SearchSettings:
    """The server's search settings with a request's beam and n-best (a beam below n-best grows to it)."""
    beam = beam or base.beam
    if max(beam, nbest) > limits.max_beam:
        raise ApiError(422, f"beam and nbest may be at most {limits.max_beam} (the server's --max-beam)")
    return dataclasses.replace(base, beam=max(beam, nbest), nbest=nbest)


def check_lines(lines: list[str], limits: Limits, field: str = "text") -> None:
    """Refuse too many lines, too long lines, line breaks inside a line, and unpaired surrogates."""
    if len(lines) > limits.max_lines:
        raise ApiError(
            413, f"{field}: {len(lines)} lines; at most {limits.max_lines} per request (--max-lines)"
        )
    for i, line in enumerate(lines):
        where = f"{field}[{i}]" if field == "text" and len(lines) > 1 else field
        if len(line) > limits.max_chars:
            raise ApiError(
                413, f"{where}: {len(line)} characters; at most {limits.max_chars} per line (--max-chars)"
            )
        if "\n" in line:
            raise ApiError(422, f"{where}: holds a line break; send one line per list item")
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError(422, f"{where}: not valid Unicode (an unpaired surrogate)") from None


def server_info(translator: Translator, settings: ServerSettings, run_name: str) -> dict[str, Any]:
    """What /info reports (and the page shows)."""
    cfg = translator.config
    search = settings.search
    return {
        "run": run_name,
        "checkpoints": [p.name for p in translator.checkpoints],
        "parameters": parameter_count(cfg, translator) * max(len(translator.checkpoints), 1),
        "languages": languages(cfg),
        "decode": {
            "beam": search.beam,
            "length_penalty": search.length_penalty,
            "max_len_a": search.max_len_a,
            "max_len_b": search.max_len_b,
            "min_len": search.min_len,
            "no_repeat_ngram": search.no_repeat_ngram,
            "max_tokens": settings.max_tokens,
            "batch_window_ms": settings.window_s * 1000,
        },
        "limits": dataclasses.asdict(settings.limits),
        "device": str(translator.device),
        "precision": str(translator.dtype or torch.float32).removeprefix("torch."),
        "quantize": translator.quantize,
        "versions": {"s2s": seq2seq.__version__, "torch": torch.__version__},
    }


def parameter_count(cfg: Config, translator: Translator) -> int:
    """Parameters of one model of the run, counted on an empty copy (int8 layers hide theirs)."""
    with torch.device("meta"):
        model = build_model(
            cfg.model, translator.tokenizers.src.vocab_size, translator.tokenizers.tgt.vocab_size
        )
    return sum(p.numel() for p in model.parameters())


def languages(cfg: Config) -> dict[str, str]:
    """Source and target language as the validation files' extensions say (val.de, val.en)."""
    return {
        "source": Path(cfg.data.valid_src).suffix.removeprefix("."),
        "target": Path(cfg.data.valid_tgt).suffix.removeprefix("."),
    }


def add_error_handlers(app: FastAPI) -> None:
    """Every error as JSON {"error": message}: malformed bodies 400, invalid fields 422."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError) -> JSONResponse:
        return JSONResponse({"error": e.message}, e.status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, e: HTTPException) -> JSONResponse:
        # FastAPI's only 400 is a body it could not decode (bytes that are not UTF-8)
        message = NOT_JSON if e.status_code == 400 else str(e.detail)
        return JSONResponse({"error": message}, e.status_code, headers=e.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        errors = e.errors()
        if any(err["type"] == "json_invalid" for err in errors):
            return JSONResponse({"error": NOT_JSON}, 400)
        if any(tuple(err["loc"]) == ("body",) for err in errors):
            return JSONResponse({"error": NOT_OBJECT}, 422)
        return JSONResponse({"error": "; ".join(map(describe, errors))}, 422)

    @app.exception_handler(Exception)
    async def failed(request: Request, e: Exception) -> JSONResponse:
        return JSONResponse({"error": "the server failed to answer; its log says why"}, 500)


def describe(error: dict[str, Any]) -> str:
    """One validation error as `field: message` (`text[2]: Input should be a valid string`)."""
    where = ""
    for part in error["loc"][1:]:
        where += f"[{part}]" if isinstance(part, int) else f"{'.' if where else ''}{part}"
    return f"{where or 'body'}: {error['msg']}"


class BodyLimit:
    """ASGI middleware: a body over `max_bytes` gets 413 before any of it is parsed."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        chunks, size, more = [], int(declared) if declared.isdigit() else 0, True
        while more and size <= self.max_bytes:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size = max(size, sum(map(len, chunks)))
            more = message.get("more_body", False)
        if size > self.max_bytes:
            error = {"error": f"the body is over {self.max_bytes} bytes (the server's --max-body-bytes)"}
            await JSONResponse(error, 413)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)
