"""The bare pass-through floor: Starlette + aiohttp, pydantic parsing, nothing else.

``BENCH_UPSTREAM`` is the upstream base URL (``http://127.0.0.1:PORT``); the client model name
picks the upstream path (:data:`bench.bodies.ROUTES`). Run: ``uvicorn bench.floor:app``.
"""

import os

import aiohttp
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from bench.bodies import upstream_path

UPSTREAM = os.environ.get("BENCH_UPSTREAM", "http://127.0.0.1:8080")
HEADERS = {"content-type": "application/json"}


class Turn(BaseModel):
    model: str
    messages: list[dict]
    stream: bool = False


async def forward(request: Request) -> Response:
    body = await request.body()
    turn = Turn.model_validate_json(body)
    session: aiohttp.ClientSession = request.app.state.session
    resp = await session.post(UPSTREAM + upstream_path(turn.model), data=body, headers=HEADERS)
    if not turn.stream:
        async with resp:
            return Response(await resp.read(), resp.status, media_type="application/json")

    async def relay():
        async with resp:
            async for chunk in resp.content.iter_any():
                yield chunk

    return StreamingResponse(relay(), resp.status, media_type="text/event-stream")


async def lifespan(app: Starlette):
    app.state.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    yield
    await app.state.session.close()


routes = [Route(p, forward, methods=["POST"]) for p in ("/v1/chat/completions", "/v1/messages")]
app = Starlette(routes=routes, lifespan=lifespan)
