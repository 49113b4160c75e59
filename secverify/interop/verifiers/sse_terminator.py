"""A loopback proxy that ends every server-sent-event stream with `data: [DONE]`.

verifiers' interception server treats a stream without that terminal event as a failed call ("upstream stream ended
before its terminal event"), and `transformers serve` ends its streams without it. Put this in front of such a
server and point the library's client at it:

    python -m secverify.interop.verifiers.sse_terminator --upstream http://127.0.0.1:8000 --port 8001

Everything else (non-streaming replies, /v1/models, status codes) passes through unchanged. It binds loopback only.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

DONE = b"data: [DONE]\n\n"
HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding"}


def terminator_app(upstream: str) -> Starlette:
    """The proxy for the OpenAI-compatible server at `upstream` (scheme://host:port, no path)."""
    client = httpx.AsyncClient(base_url=upstream, timeout=None)

    async def forward(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        sent = client.build_request(
            request.method, request.url.path, params=request.query_params, content=await request.body(), headers=headers
        )
        reply = await client.send(sent, stream=True)
        media_type = reply.headers.get("content-type", "")
        if "text/event-stream" not in media_type:
            body = await reply.aread()
            await reply.aclose()
            return Response(body, status_code=reply.status_code, media_type=media_type or None)

        async def events() -> AsyncIterator[bytes]:
            tail = b""
            try:
                async for chunk in reply.aiter_bytes():
                    tail = (tail + chunk)[-64:]
                    yield chunk
                if b"data: [DONE]" not in tail:
                    yield DONE
            finally:
                await reply.aclose()

        return StreamingResponse(events(), status_code=reply.status_code, media_type="text/event-stream")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()

    return Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST"])], lifespan=lifespan)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the server's base, e.g. http://127.0.0.1:8000")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    uvicorn.run(terminator_app(args.upstream), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
