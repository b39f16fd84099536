"""What a request to `s2s serve` may ask for, and how a refused one is answered.

Every error is JSON `{"error": "..."}` with a 4xx status that says what to change: 400 a body that is
not JSON (or not UTF-8), 413 too large (body, lines, characters), 422 a field that is missing, of the
wrong type, unknown or out of range, 408 no answer within the timeout (raised by `app`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from seq2seq.config import DecodeConfig
from seq2seq.decoding.settings import SearchSettings
from seq2seq.serve.server_settings import Limits
from seq2seq.translate.options import DecodeOverrides, decode_options

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

NOT_JSON = "the body is not valid JSON in UTF-8"
NOT_OBJECT = 'send a JSON object ({"text": [...]}) with the header Content-Type: application/json'


class ApiError(Exception):
    """A request the server refuses: an HTTP status and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def request_search(
    server: DecodeOverrides, decode: DecodeConfig, beam: int | None, nbest: int, limits: Limits
) -> SearchSettings:
    """The search of one request: its beam and n-best over the server's, merged as a command line is."""
    asked = dataclasses.replace(server, beam=beam or server.beam, nbest=nbest)
    search = decode_options(asked, decode).search  # its beam is at least the n-best
    if search.beam > limits.max_beam:
        raise ApiError(422, f"beam and nbest may be at most {limits.max_beam} (the server's --max-beam)")
    return search


def check_lines(lines: list[str], limits: Limits, field: str = "text") -> None:
    """Refuse too many lines, too long lines, line breaks inside a line, and unpaired surrogates."""
    if len(lines) > limits.max_lines:
        raise ApiError(
            413, f"{field}: {len(lines)} lines; at most {limits.max_lines} per request (--max-lines)"
        )
    for i, line in enumerate(lines):
        where = f"{field}[{i}]" if field in ("text", "prefix") and len(lines) > 1 else field
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
