"""The HTTP API of `s2s serve` (FastAPI): the page, /translate, /attention, /info, /health.

Requests are checked and refused as `limits` says. The model is used only by the batcher's thread;
handlers wait on its futures, so the event loop never blocks on decoding.
No endpoint reads a file a client names: the page is read once, from the package, at start-up.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field

import seq2seq.serve
from seq2seq.align.pharaoh import format_pharaoh
from seq2seq.errors import Seq2SeqError
from seq2seq.models.family import model_family
from seq2seq.serve.batcher import Batcher
from seq2seq.serve.continuous import ContinuousBatcher
from seq2seq.serve.info import server_info
from seq2seq.serve.limits import (
    ApiError,
    BodyLimit,
    add_error_handlers,
    check_lines,
    request_search,
)
from seq2seq.serve.server_settings import Limits, ServerSettings
from seq2seq.translate.aligned import AnnotatedEngine, Annotations
from seq2seq.translate.casing import Recaser, restored
from seq2seq.translate.direction import Direction
from seq2seq.translate.engine import Engine, prefix_refusal
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request
from seq2seq.translate.source_tokens import target_languages
from seq2seq.translate.translator import Translator

# the page may run its own inline script and style and talk to this server, and nothing else
PAGE_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'"
)


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: list[str] = Field(description="Source lines; one translation comes back per line, in order.")
    beam: int | None = Field(None, ge=1, description="Beam size (1 = greedy); default: the server's.")
    nbest: int = Field(1, ge=1, description="Hypotheses per line, best first, with their scores.")
    scores: bool = Field(False, description="Also return the score of each best translation.")
    to: str | None = Field(
        None,
        description="A multilingual run: the language to translate into (one of /info's "
        "languages.targets, or any of its languages); default: the server's --to, or the only one.",
    )
    prefix: list[str] | None = Field(
        None,
        description='Target prefixes, one per line of text ("" for none): each translation starts '
        "with its prefix and goes on from it (interactive translation, autocompletion).",
    )
    alignments: bool = Field(
        False,
        description="Also return each best translation's word alignment: Pharaoh i-j pairs, source word "
        "i to target word j (whitespace-separated words, from 0).",
    )
    markup: Literal["html", "xml"] | None = Field(
        None,
        description="The lines carry inline tags of this kind: translated without them, put back "
        "around the words aligned to those they wrapped.",
    )


class HypothesisJSON(BaseModel):
    text: str
    score: float | None  # null for a blank hypothesis, which has no score


class TranslateResponse(BaseModel):
    translations: list[str]  # the best translation of each line ("" for an empty line)
    scores: list[float | None] | None = None  # with "scores": true (null for a blank line: it has none)
    nbest: list[list[HypothesisJSON]] | None = None  # with "nbest" > 1
    alignments: list[str] | None = None  # with "alignments": true, each best translation's


class AttentionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str = Field(description="One source sentence.")
    translation: str | None = Field(None, description="Its translation; default: the server's.")
    to: str | None = Field(None, description="A multilingual run: the language of the translation.")


class AttentionResponse(BaseModel):
    translation: str
    source: list[str]  # source pieces, then </s>
    target: list[str]  # target pieces, then </s>
    weights: list[list[float]]  # (target, source): where the last decoder layer looks, rows sum to 1


def create_app(
    translator: Engine,
    settings: ServerSettings,
    run_name: str,
    decode_thread: bool = True,
    running: Translator | None = None,
    recaser: Recaser | None = None,
) -> FastAPI:
    """The application; its batcher is `app.state.batcher`, drained when the app shuts down.

    `translator` is the engine that decodes (`Engine`); `running` is s2s's decoder when it is that
    engine: what continuous batching joins sentences into (`batcher_for`).

    With `decode_thread`, the app's start-up starts the batcher on a thread of its own; without it,
    the caller runs `app.state.batcher.run()` on the thread that loaded the model (`serve.run`).
    """
    limits, task, answers = settings.limits, translator.task, translator.answers
    defaults = translator.options(settings.asked)
    targets = target_languages(translator.config.data)
    language, default_to = request_languages(translator, settings.direction.to)

    batcher = batcher_for(translator, settings, defaults.max_tokens, running)
    info = server_info(translator, defaults, run_name, batcher, settings.window_s, limits)
    info["languages"] |= {"targets": targets, "to": default_to}
    page = resources.files(seq2seq.serve).joinpath("static/index.html").read_text(encoding="utf-8")

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

    @app.post("/translate", response_model=TranslateResponse, response_model_exclude_unset=True)
    async def translate(request: TranslateRequest) -> TranslateResponse:
        """Translate lines: one translation per line, in order; an empty line gives ""."""
        search = request_search(settings.asked, translator.config.decode, request.beam, request.nbest, limits)
        if request.nbest > 1 and not answers.gives_nbest:
            raise ApiError(422, f"nbest: a {task} model gives one answer per line")
        check_lines(request.text, limits)
        if request.prefix is not None:
            check_prefixes(request.prefix, request.text, translator, limits)
        asked = Request(search, defaults.max_tokens, language(request.to))
        if request.alignments or request.markup:
            return await annotated_answer(translator, batcher, answer, request, asked)
        return await plain_answer(batcher, answer, request, asked, recaser)

    @app.post("/attention", response_model=AttentionResponse)
    async def attention(request: AttentionRequest) -> AttentionResponse:
        """Cross-attention of one sentence (last decoder layer, mean over heads), teacher-forced on
        its translation."""
        if not answers.draws_attention:
            raise ApiError(422, f"a {task} model reads without cross-attention: there is none to draw")
        check_lines([request.text], limits, field="text")
        if not request.text.strip():
            raise ApiError(422, "text: give a sentence to draw the attention of")
        asked, translation = Request.of(defaults, direction=language(request.to)), request.translation
        if translation is None:
            translation = (await answer(batcher.translate([request.text], asked)))[0].texts[0]
        else:
            check_lines([translation], limits, field="translation")
        found = await answer(batcher.call(lambda: translator.attention_map(request.text, translation, asked)))
        return AttentionResponse(
            translation=translation,
            source=found.source,
            target=found.target,
            weights=[[round(w, 4) for w in row] for row in found.weights.tolist()],
        )

    return app


def check_prefixes(prefixes: list[str], text: list[str], translator: Engine, limits: Limits) -> None:
    """A request's target prefixes: a 422 unless the model writes, and there is one per line."""
    if (why := prefix_refusal(translator)) is not None:
        raise ApiError(422, f"prefix: {why}")
    if len(prefixes) != len(text):
        raise ApiError(422, f"prefix: {len(prefixes)} for {len(text)} lines of text; give one per line")
    check_lines(prefixes, limits, field="prefix")


async def plain_answer(
    batcher: Batcher,
    answer: Callable[[Future], Awaitable[Any]],
    request: TranslateRequest,
    asked: Request,
    recaser: Recaser | None,
) -> TranslateResponse:
    """The answer to a /translate request without alignments or markup; with `recaser`
    (`--restore-case`), its lines in ALL CAPS or Title Case translated recased and given their case
    back, as `s2s translate --restore-case` does (a request with annotations reads its lines as given:
    their links are drawn on them)."""
    if recaser is None:
        results = await answer(batcher.translate(request.text, asked, request.prefix))
        return translate_response(results, request.scores, request.nbest)
    recased = [recaser.line(line) for line in request.text]
    found = await answer(batcher.translate([r.text for r in recased], asked, request.prefix))
    return translate_response(restored(recased, found), request.scores, request.nbest)


async def annotated_answer(
    translator: Engine,
    batcher: Batcher,
    answer: Callable[[Future], Awaitable[Any]],
    request: TranslateRequest,
    asked: Request,
) -> TranslateResponse:
    """The answer to a /translate request with alignments or markup: the lines read (a 422 names a
    malformed one), translated, then annotated on the batcher's thread, which holds the model."""
    try:
        annotated = AnnotatedEngine(translator, Annotations(request.alignments, request.markup))
        marked, sources = annotated.read(request.text)
    except Seq2SeqError as e:
        raise ApiError(422, f"text: {e}") from None
    results = await answer(batcher.translate(sources, asked, request.prefix))
    # the response holds the best hypothesis's links only
    found = await answer(batcher.call(lambda: annotated.annotate(sources, marked, results, asked, True)))
    results = [Translation(texts, r.scores) for (texts, _), r in zip(found, results, strict=True)]
    response = translate_response(results, request.scores, request.nbest)
    if request.alignments:
        response.alignments = [format_pharaoh(links[0]) if links else "" for _, links in found]
    return response


def request_languages(translator: Engine, to: str) -> tuple[Callable[[str | None], Direction], str]:
    """How a request's direction is found: its target language checked, or the server's default `to`
    (a 422 when there is none); and that default: a multilingual run of several targets and no --to
    has none, each request chooses (the server's own --to is checked here, at start)."""
    several = len(target_languages(translator.config.data)) > 1
    default_to = "" if not to and several else translator.source_tokens.language(to)

    def language(asked: str | None) -> Direction:
        try:
            return Direction(translator.source_tokens.language(default_to if asked is None else asked, "to"))
        except Seq2SeqError as e:
            raise ApiError(422, str(e)) from None

    return language, default_to


def translate_response(results: list[Translation], scores: bool, nbest: int) -> TranslateResponse:
    """The answer to /translate: each line's best translation, and its score (`scores`) and n-best list
    (`nbest` > 1) when asked for, a field only then; a blank translation's score is null: it has none."""
    response = TranslateResponse(translations=[r.texts[0] for r in results])
    if scores:
        response.scores = [r.scores[0] for r in results]
    if nbest > 1:
        response.nbest = [
            [HypothesisJSON(text=t, score=s) for t, s in zip(r.texts, r.scores, strict=True)] for r in results
        ]
    return response


BATCHINGS = ("auto", "continuous", "static")


def batcher_for(
    translator: Engine, settings: ServerSettings, max_tokens: int, running: Translator | None
) -> Batcher:
    """The batcher `settings.batching` asks for: continuous batching needs s2s's decoder (`running`)
    over a family that joins sentences into a running search (an encoder-decoder's); auto takes it
    there. Static batches keep as many calls in flight as the engine runs well together."""
    if settings.batching not in BATCHINGS:
        raise Seq2SeqError(f"--batching {settings.batching}: choose one of {', '.join(BATCHINGS)}")
    family = model_family(translator.config.model)
    if settings.batching == "continuous" and running is None:
        raise Seq2SeqError(
            "--batching continuous joins sentences into s2s's running search; CTranslate2 decodes in "
            "static batches: use --batching static, or --engine s2s"
        )
    if settings.batching == "continuous" and not family.joins_running_batches:
        raise Seq2SeqError(
            f"--batching continuous: a {family.name} {translator.task} run decodes in static batches; "
            "use --batching static"
        )
    if settings.batching == "static" or running is None or not family.joins_running_batches:
        return Batcher(translator, settings.window_s, max_tokens, translator.calls_at_once)
    return ContinuousBatcher(running, max_tokens)
