"""Fixed request and upstream response bodies used by the benchmark.

Every server under test is asked for the same client model names; :data:`ROUTES` maps each
name to the path prefix of the nginx stand-in that answers it with a fixed body. Nothing here
contains ``$`` or ``'`` (they would break the nginx ``return`` strings).
"""

from __future__ import annotations

from typing import Any

import orjson

STREAM_CHUNKS = 48
"""Content deltas in each stream (plus start/stop frames: ~50 SSE events per stream)."""

OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-sonnet-4-5"

# client model name -> (wire API, nginx path prefix)
ROUTES: dict[str, tuple[str, str]] = {
    "bench-openai": ("openai", "/oa/v1"),
    "bench-openai-stream": ("openai", "/oa-stream/v1"),
    "bench-openai-tools": ("openai", "/oa-tools/v1"),
    "bench-anthropic": ("anthropic", "/an"),
    "bench-anthropic-stream": ("anthropic", "/an-stream"),
    # translation lanes: the client's dialect is the other one (see LANES)
    "bench-an2oa": ("openai", "/oa/v1"),
    "bench-an2oa-stream": ("openai", "/oa-stream/v1"),
    "bench-oa2an": ("anthropic", "/an"),
    "bench-oa2an-stream": ("anthropic", "/an-stream"),
    # answered after UPSTREAM_DELAY_S (sustained load) / paced chunks (stream ceiling)
    "bench-openai-20ms": ("openai", "/oa-20ms/v1"),
    "bench-openai-paced": ("openai", "/oa-paced/v1"),
}

UPSTREAM_DELAY_S = 0.020
"""How long the ``bench-openai-20ms`` upstream waits before it answers (nginx ``echo_sleep``)."""

PACED_CHUNKS = 40
PACED_GAP_S = 0.050
"""The ``bench-openai-paced`` upstream sends :data:`PACED_CHUNKS` content chunks, one every
:data:`PACED_GAP_S` (a 2-second answer at 20 chunks/s), each flushed on its own."""


def upstream_path(model: str) -> str:
    """The full nginx path that answers client model ``model``."""
    api, prefix = ROUTES[model]
    return prefix + ("/chat/completions" if api == "openai" else "/v1/messages")


# ---------------------------------------------------------------------------- upstream answers

_USAGE_OA = {
    "prompt_tokens": 24,
    "completion_tokens": STREAM_CHUNKS,
    "total_tokens": 24 + STREAM_CHUNKS,
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}


def openai_response() -> bytes:
    """A ``chat.completion`` with a short text answer."""
    return orjson.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1700000000,
            "model": OPENAI_MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Hello from the bench upstream.",
                        "refusal": None,
                    },
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": _USAGE_OA,
        }
    )


def openai_tool_response() -> bytes:
    """A ``chat.completion`` that calls one tool (finish_reason ``tool_calls``)."""
    call = {
        "id": "call_bench_next",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "src/module_41.py"}'},
    }
    return orjson.dumps(
        {
            "id": "chatcmpl-bench-tools",
            "object": "chat.completion",
            "created": 1700000000,
            "model": OPENAI_MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": _USAGE_OA,
        }
    )


def _sse(obj: Any, event: str | None = None) -> bytes:
    head = b"" if event is None else b"event: " + event.encode() + b"\n"
    return head + b"data: " + orjson.dumps(obj) + b"\n\n"


def openai_stream() -> bytes:
    """A ``chat.completion.chunk`` SSE stream: role chunk, :data:`STREAM_CHUNKS` content chunks,
    finish chunk, usage chunk, ``[DONE]``."""
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": OPENAI_MODEL,
    }
    frames = [
        _sse(
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                ],
            }
        )
    ]
    for i in range(STREAM_CHUNKS):
        frames.append(
            _sse({**base, "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}]})
        )
    frames.append(_sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    frames.append(_sse({**base, "choices": [], "usage": _USAGE_OA}))
    frames.append(b"data: [DONE]\n\n")
    return b"".join(frames)


def openai_paced_frames() -> list[bytes]:
    """The ``bench-openai-paced`` stream as SSE frames: role chunk, :data:`PACED_CHUNKS` content
    chunks, finish + usage + ``[DONE]`` (the upstream waits :data:`PACED_GAP_S` before each
    content chunk)."""
    frames = openai_stream().split(b"\n\n")[:-1]
    head, tail = frames[0], frames[-3:]
    body = [f.replace(b"tok0 ", f"tok{i} ".encode()) for i, f in enumerate([frames[1]] * PACED_CHUNKS)]
    return [f + b"\n\n" for f in (head, *body, b"\n\n".join(tail))]


def anthropic_response() -> bytes:
    """A Messages API answer with one text block."""
    return orjson.dumps(
        {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": ANTHROPIC_MODEL,
            "content": [{"type": "text", "text": "Hello from the bench upstream."}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 24,
                "output_tokens": 7,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
    )


def anthropic_stream() -> bytes:
    """A Messages API SSE stream: message_start, one text block of :data:`STREAM_CHUNKS` deltas,
    message_delta (end_turn), message_stop."""
    frames = [
        _sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "model": ANTHROPIC_MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 24,
                        "output_tokens": 1,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                    },
                },
            },
            "message_start",
        ),
        _sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        ),
    ]
    for i in range(STREAM_CHUNKS):
        frames.append(
            _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": f"tok{i} "},
                },
                "content_block_delta",
            )
        )
    frames.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    frames.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": STREAM_CHUNKS},
            },
            "message_delta",
        )
    )
    frames.append(_sse({"type": "message_stop"}, "message_stop"))
    return b"".join(frames)


def upstream_bodies() -> dict[str, tuple[str, bytes]]:
    """Every nginx path and the fixed (content type, body) it answers."""
    return {
        upstream_path("bench-openai"): ("application/json", openai_response()),
        upstream_path("bench-openai-stream"): ("text/event-stream", openai_stream()),
        upstream_path("bench-openai-tools"): ("application/json", openai_tool_response()),
        upstream_path("bench-anthropic"): ("application/json", anthropic_response()),
        upstream_path("bench-anthropic-stream"): ("text/event-stream", anthropic_stream()),
    }


def delayed_bodies() -> dict[str, tuple[str, bytes]]:
    """The nginx paths answered after :data:`UPSTREAM_DELAY_S`: path -> (content type, body)."""
    return {upstream_path("bench-openai-20ms"): ("application/json", openai_response())}


def paced_streams() -> dict[str, list[bytes]]:
    """The nginx paths answered with paced chunks: path -> the frames, flushed one by one."""
    return {upstream_path("bench-openai-paced"): openai_paced_frames()}


# ---------------------------------------------------------------------------- client requests

SYSTEM = "You are a concise assistant used by a benchmark."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
    for name, desc in (
        ("read_file", "Read a file"),
        ("list_dir", "List a directory"),
        ("grep", "Search files"),
    )
]


def tool_conversation(turns: int = 40) -> list[dict[str, Any]]:
    """An OpenAI-dialect agent conversation: system, user, then ``turns`` tool-calling turns
    (assistant with one tool call, its tool result)."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Read the modules one by one and summarise them."},
    ]
    for i in range(turns):
        cid = f"call_{i:04d}"
        msgs.append(
            {
                "role": "assistant",
                "content": f"Reading module {i}.",
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": orjson.dumps({"path": f"src/module_{i}.py"}).decode(),
                        },
                    }
                ],
            }
        )
        msgs.append(
            {
                "role": "tool",
                "tool_call_id": cid,
                "content": f"# module {i}\n" + "def f(x):\n    return x + 1\n" * 8,
            }
        )
    return msgs


def _openai_body(model: str, *, stream: bool) -> bytes:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Say hello."}],
        "max_tokens": 64,
    }
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return orjson.dumps(body)


def _anthropic_body(model: str, *, stream: bool) -> bytes:
    body: dict[str, Any] = {
        "model": model,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 64,
    }
    if stream:
        body["stream"] = True
    return orjson.dumps(body)


def extra_bodies() -> dict[str, tuple[str, bytes]]:
    """Requests outside the case table: the sustained-load case (``openai-20ms``) and the
    stream-ceiling case (``openai-paced``): name -> (client path, body)."""
    return {
        "openai-20ms": ("/v1/chat/completions", _openai_body("bench-openai-20ms", stream=False)),
        "openai-paced": ("/v1/chat/completions", _openai_body("bench-openai-paced", stream=True)),
    }


def request_bodies() -> dict[str, tuple[str, bytes]]:
    """Benchmark case -> (client path, request body)."""
    user = {"role": "user", "content": "Say hello."}
    return {
        "openai": (
            "/v1/chat/completions",
            orjson.dumps(
                {
                    "model": "bench-openai",
                    "messages": [{"role": "system", "content": SYSTEM}, user],
                    "max_tokens": 64,
                }
            ),
        ),
        "openai-stream": (
            "/v1/chat/completions",
            orjson.dumps(
                {
                    "model": "bench-openai-stream",
                    "messages": [{"role": "system", "content": SYSTEM}, user],
                    "max_tokens": 64,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                }
            ),
        ),
        "anthropic": (
            "/v1/messages",
            orjson.dumps(
                {"model": "bench-anthropic", "system": SYSTEM, "messages": [user], "max_tokens": 64}
            ),
        ),
        "anthropic-stream": (
            "/v1/messages",
            orjson.dumps(
                {
                    "model": "bench-anthropic-stream",
                    "system": SYSTEM,
                    "messages": [user],
                    "max_tokens": 64,
                    "stream": True,
                }
            ),
        ),
        "x-an2oa": ("/v1/messages", _anthropic_body("bench-an2oa", stream=False)),
        "x-an2oa-stream": ("/v1/messages", _anthropic_body("bench-an2oa-stream", stream=True)),
        "x-oa2an": ("/v1/chat/completions", _openai_body("bench-oa2an", stream=False)),
        "x-oa2an-stream": ("/v1/chat/completions", _openai_body("bench-oa2an-stream", stream=True)),
        "tools-40": (
            "/v1/chat/completions",
            orjson.dumps(
                {
                    "model": "bench-openai-tools",
                    "messages": tool_conversation(40),
                    "tools": TOOLS,
                    "max_tokens": 256,
                }
            ),
        ),
    }


CASE_MODEL = {
    "openai": "bench-openai",
    "openai-stream": "bench-openai-stream",
    "anthropic": "bench-anthropic",
    "anthropic-stream": "bench-anthropic-stream",
    "tools-40": "bench-openai-tools",
    "x-an2oa": "bench-an2oa",
    "x-an2oa-stream": "bench-an2oa-stream",
    "x-oa2an": "bench-oa2an",
    "x-oa2an-stream": "bench-oa2an-stream",
}
STREAM_CASES = ("openai-stream", "anthropic-stream", "x-an2oa-stream", "x-oa2an-stream")
LANES = {
    "x-an2oa": "anthropic",
    "x-an2oa-stream": "anthropic-stream",
    "x-oa2an": "openai",
    "x-oa2an-stream": "openai-stream",
}
"""Translation lane -> the same-API lane of the same client dialect: ``x-an2oa`` is an Anthropic
Messages client answered by an OpenAI Chat upstream, ``x-oa2an`` the reverse."""
