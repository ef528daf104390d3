"""Stored responses read back in the OpenAI Responses shapes: ``GET /v1/responses/{id}``,
``GET /v1/responses/{id}/input_items`` and ``DELETE /v1/responses/{id}``.

References: https://platform.openai.com/docs/api-reference/responses/get,
https://platform.openai.com/docs/api-reference/responses/input-items,
https://platform.openai.com/docs/api-reference/responses/delete. What is stored is the
conversation (:mod:`gateway.sessions.responses`), not the rendered answer: a response read back
has ``status: completed``, ``usage: null`` and none of the request's settings but its model;
its output items are rebuilt from the stored answer as :func:`render_response` renders them.
Input items are the messages its own turn appended: user messages, tool results (as
``function_call_output``; a custom tool's result reads back the same way) and assistant items.
"""

from __future__ import annotations

from typing import Any

from gateway.edges._common import data_uri
from gateway.edges.openai_responses_parse import ResponsesRequest
from gateway.edges.openai_responses_render import item_id, output_item, response_body
from gateway.errors import InvalidRequest
from gateway.providers.media_wire import OPENAI_AUDIO_FORMATS, responses_input_file
from gateway.schema import (
    AssistantMessage,
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    TextPart,
    ToolResultMessage,
    UserMessage,
)


def _stub(response_id: str, model: str) -> ResponsesRequest:
    return ResponsesRequest(model=model, messages=[], echo={"response_id": response_id})


def _parts(parts: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in parts:
        if type(p) is TextPart:
            out.append({"type": "input_text", "text": p.text})
        elif type(p) is ImagePart:
            url = p.url if p.url is not None else data_uri(p.media_type, p.data or "")
            out.append({"type": "input_image", "image_url": url, "detail": "auto"})
        elif type(p) is DocumentPart:
            out.append(responses_input_file(p))
        elif type(p) is AudioPart:
            fmt = OPENAI_AUDIO_FORMATS.get(p.media_type or "", p.media_type)  # the SDK's ResponseInputAudio
            out.append({"type": "input_audio", "input_audio": {"data": p.data or p.url or "", "format": fmt}})
    return out


def render_stored(
    response_id: str, created_at: float, model: str, answer: AssistantMessage | None
) -> dict[str, Any]:
    """The Response object of a stored response (``answer``: its stored assistant message)."""
    request = _stub(response_id, model)
    parts = answer.content if answer is not None else []
    items = (output_item(part, response_id, n, request) for n, part in enumerate(parts))
    output = [item for item in items if item is not None]
    return response_body(
        request,
        resp_id=response_id,
        created_at=int(created_at),
        model=model,
        status="completed",
        output=output,
        usage=None,
    )


def input_item(entry_id: str, message: Message, response_id: str) -> list[dict[str, Any]]:
    """The input items of one stored message (an assistant message gives one per part)."""
    if isinstance(message, UserMessage):
        return [
            {
                "id": f"msg_{entry_id}",
                "type": "message",
                "role": "user",
                "status": "completed",
                "content": _parts(message.content),
            }
        ]
    if isinstance(message, ToolResultMessage):
        parts = _parts(message.content)
        single = len(parts) == 1 and parts[0]["type"] == "input_text"
        return [
            {
                "id": f"fco_{entry_id}",
                "type": "function_call_output",
                "call_id": message.tool_call_id,
                "output": parts[0]["text"] if single else parts,
                "status": "completed",
            }
        ]
    if isinstance(message, AssistantMessage):
        request = _stub(response_id, "")
        prefix = f"resp_{entry_id}"
        items = (output_item(part, prefix, n, request) for n, part in enumerate(message.content))
        return [item for item in items if item is not None]
    return []


def render_input_items(
    response_id: str, inputs: list[tuple[str, Message]], query: dict[str, str]
) -> dict[str, Any]:
    """The ``input_items`` list page: ``order`` (``desc``, OpenAI's default, or ``asc``),
    ``limit`` (1-100, default 20) and ``after`` (an item id) from ``query``. Raises
    :class:`InvalidRequest` naming a bad query parameter."""
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest(f"order: expected asc or desc, got {order!r}", param="order")
    raw_limit = query.get("limit", "20")
    if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= 100:
        raise InvalidRequest(f"limit: expected an integer from 1 to 100, got {raw_limit!r}", param="limit")
    for key in query:
        if key not in ("order", "limit", "after"):
            raise InvalidRequest(f"{key}: unknown query parameter of input_items", param=key)
    items = [item for eid, msg in inputs for item in input_item(eid, msg, response_id)]
    if order == "desc":
        items.reverse()
    after = query.get("after")
    if after is not None:
        ids = [i["id"] for i in items]
        if after not in ids:
            raise InvalidRequest(f"after: no input item {after!r} in response {response_id!r}", param="after")
        items = items[ids.index(after) + 1 :]
    page = items[: int(raw_limit)]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > len(page),
    }


def check_retrieve_query(query: dict[str, str]) -> None:
    """Refuse the query parameters of ``GET /v1/responses/{id}`` this gateway cannot honour
    (https://platform.openai.com/docs/api-reference/responses/get): ``stream=true`` (a stored
    response is read back whole, not replayed as events), ``starting_after`` (an event number of
    such a stream), ``include``/``include[]`` and ``include_obfuscation`` (nothing extra is
    stored to add), and unknown ones. ``stream=false`` asks for nothing. Raises
    :class:`InvalidRequest` naming the parameter."""
    for key, value in query.items():
        if key == "stream" and value == "false":
            continue
        if key in ("stream", "starting_after", "include", "include[]", "include_obfuscation"):
            raise InvalidRequest(
                f"{key}: {key}={value!r} when reading a stored response is not supported (it is read "
                "back whole, as stored)",
                param=key,
            )
        raise InvalidRequest(f"{key}: unknown query parameter of a stored response", param=key)


def render_deleted(response_id: str) -> dict[str, Any]:
    """The ``DELETE /v1/responses/{id}`` body."""
    return {"id": response_id, "object": "response", "deleted": True}


__all__ = ["check_retrieve_query", "item_id", "render_deleted", "render_input_items", "render_stored"]
