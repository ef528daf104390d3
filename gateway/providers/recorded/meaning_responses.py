"""What an OpenAI Responses answer means, read independently of the adapters.

The Responses counterpart of :mod:`gateway.providers.recorded.meaning`: a ``response`` object
(a non-streaming body, or the ``response`` of a stream's ``response.completed`` /
``response.incomplete`` / ``response.failed`` event) or the decoded events of a stream, read
into the same :class:`~gateway.providers.recorded.meaning.Meaning`.

Reading rules (https://platform.openai.com/docs/api-reference/responses/object):

* ``message`` items: the text of their ``output_text`` parts (``refusal`` parts too), joined;
* ``reasoning`` items: one thinking part each, the text of its ``summary`` parts (or of its
  ``content`` ``reasoning_text`` parts, which some servers send instead) joined by a blank
  line, with its ``encrypted_content`` as the signature;
* ``function_call`` items: a call with ``call_id`` and ``arguments`` as carried;
  ``custom_tool_call`` items: a call of the function a custom tool is carried as, arguments
  ``{"input": <its free-form input>}`` (compact JSON);
* stop: ``completed`` -> ``stop`` (``tool_use`` when there are calls); ``incomplete`` with
  ``incomplete_details.reason`` ``max_output_tokens`` -> ``length``, ``content_filter`` ->
  ``content_filter``; ``failed`` / ``cancelled`` -> ``error``;
* usage: ``input_tokens`` includes ``input_tokens_details.cached_tokens`` and, where a server
  reports them (openai SDK 3.57 types), ``cache_write_tokens`` (so ``input`` is the
  difference); ``output_tokens`` includes ``output_tokens_details.reasoning_tokens``.

A stream is read from its deltas and ``output_item.done`` events, not from the final
response object, so a stream cut before its end still means what it delivered; the final
event gives the status and usage. (Recorded OpenAI streams carry a different, equally valid
``encrypted_content`` for the same reasoning item in ``output_item.done`` and in the final
``response``: the item's own is the one read.)
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.providers.recorded.meaning import Call, Meaning

_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
_TERMINAL = ("response.completed", "response.incomplete", "response.failed", "response.cancelled")


def _usage(u: Any) -> dict[str, int]:
    if not isinstance(u, dict):
        return {}
    details = u.get("input_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0)
    write = int(details.get("cache_write_tokens") or 0)
    reasoning = int((u.get("output_tokens_details") or {}).get("reasoning_tokens") or 0)
    return {
        "input": max(int(u.get("input_tokens") or 0) - cached - write, 0),
        "output": int(u.get("output_tokens") or 0),
        "cache_read": cached,
        "cache_write": write,
        "reasoning": reasoning,
    }


def _stop(m: Meaning, resp: dict[str, Any]) -> None:
    status = resp.get("status")
    if status is None:
        return
    if status == "incomplete":
        reason = str((resp.get("incomplete_details") or {}).get("reason") or "")
        m.raw_stop = f"incomplete:{reason}"
        m.stop = _INCOMPLETE.get(reason, f"unknown:{reason}")
    elif status == "completed":
        m.raw_stop = "completed"
        m.stop = "tool_use" if m.calls else "stop"
    elif status in ("failed", "cancelled"):
        m.raw_stop = str(status)
        m.stop = "error"
    else:
        m.raw_stop = str(status)


def _turnstile(m: Meaning, obj: dict[str, Any]) -> None:
    meta = obj.get("turnstile")
    if isinstance(meta, dict):
        m.withheld = [str(w.get("id")) for w in meta.get("withheld_tool_calls") or []]
        if meta.get("stop_reason"):
            m.stop = str(meta["stop_reason"])


def _reasoning_text(item: dict[str, Any]) -> str:
    parts = item.get("summary") or item.get("content") or []
    return "\n\n".join(str(p.get("text") or "") for p in parts if isinstance(p, dict))


def _item(m: Meaning, item: dict[str, Any], text: str | None = None) -> None:
    """Read one finished output item; ``text`` replaces a message's text when the stream's
    deltas already gave it."""
    kind = item.get("type")
    if kind == "message":
        if text is None:
            text = "".join(
                str(p.get("text") or p.get("refusal") or "")
                for p in item.get("content") or []
                if isinstance(p, dict)
            )
        m.text += text
    elif kind == "reasoning":
        thought = text if text is not None else _reasoning_text(item)
        m.thinking.append((thought, item.get("encrypted_content")))
    elif kind == "function_call":
        m.calls.append(Call(item.get("call_id"), str(item.get("name")), str(item.get("arguments") or "")))
    elif kind == "custom_tool_call":
        text = str(item.get("input") or "")
        m.calls.append(
            Call(item.get("call_id"), str(item.get("name")), orjson.dumps({"input": text}).decode())
        )


def responses_body(obj: dict[str, Any]) -> Meaning:
    """A ``response`` object (``object: "response"``)."""
    m = Meaning()
    for item in obj.get("output") or []:
        if isinstance(item, dict):
            _item(m, item)
    _stop(m, obj)
    m.usage = _usage(obj.get("usage"))
    _turnstile(m, obj)
    return m


def responses_events(events: list[dict[str, Any]]) -> Meaning:
    """The decoded ``data`` objects of one Responses stream, in order. Text and reasoning come
    from the deltas; an item's call from its ``output_item.done`` (or, for a call whose item
    never finished, from its ``output_item.added`` and argument deltas)."""
    m = Meaning()
    texts: dict[str, dict[int, list[str]]] = {}
    open_items: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    done: dict[str, dict[str, Any]] = {}
    final: dict[str, Any] | None = None
    for ev in events:
        kind = ev.get("type")
        key = str(ev.get("item_id") or ev.get("output_index"))
        if kind == "response.output_item.added":
            item = ev.get("item") or {}
            k = str(item.get("id") or ev.get("output_index"))
            open_items[k] = dict(item)
            order.append(k)
        elif kind in (
            "response.output_text.delta",
            "response.refusal.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_text.delta",
        ):
            part = int(ev.get("summary_index", ev.get("content_index", 0)) or 0)
            texts.setdefault(key, {}).setdefault(part, []).append(str(ev.get("delta") or ""))
        elif kind == "response.function_call_arguments.delta":
            slot = open_items.get(key)
            if slot is not None:
                slot["arguments"] = str(slot.get("arguments") or "") + str(ev.get("delta") or "")
        elif kind == "response.custom_tool_call_input.delta":
            slot = open_items.get(key)
            if slot is not None:
                slot["input"] = str(slot.get("input") or "") + str(ev.get("delta") or "")
        elif kind == "response.output_item.done":
            item = ev.get("item") or {}
            k = str(item.get("id") or ev.get("output_index"))
            if k not in open_items:
                order.append(k)
            done[k] = item
        elif kind in _TERMINAL:
            final = ev.get("response") or {}
    for k in order:
        item = done.get(k) or open_items.get(k) or {}
        parts = texts.get(k)
        joiner = "\n\n" if item.get("type") == "reasoning" else ""
        streamed = joiner.join("".join(parts[i]) for i in sorted(parts)) if parts else None
        _item(m, item, streamed if item.get("type") in ("message", "reasoning") else None)
    if final is not None:
        if not order:  # a server that sends only the final object
            for item in final.get("output") or []:
                if isinstance(item, dict):
                    _item(m, item)
        m.usage = _usage(final.get("usage"))
        _stop(m, final)
        _turnstile(m, final)
    return m
