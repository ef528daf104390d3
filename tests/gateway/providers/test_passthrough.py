"""Same-wire fields per deployment (gateway/providers/passthrough.py): sent to an upstream of
the client's own wire API (reasoning settings only to a reasoning model); toward every other
API the target layer drops them by their serving-only class."""

from __future__ import annotations

from gateway.config import Deployment
from gateway.providers.passthrough import serving_names, split
from gateway.schema import NativeFields, Request, TextPart, UserMessage

FIELDS = {
    "openai_responses": {
        "prompt_cache_key": "k",
        "client_metadata": {"a": "b"},
        "text": {"verbosity": "low"},
        "reasoning": {"context": "all_turns"},
    }
}


def _req() -> Request:
    fields = FIELDS["openai_responses"]
    native = NativeFields(api="openai_responses", fields=fields, serving=serving_names(fields))
    return Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], native=native)


def _dep(api: str, model: str = "gpt-5") -> Deployment:
    return Deployment(name="d", api=api, model=model)  # type: ignore[arg-type]


def test_an_upstream_of_the_same_api_is_sent_every_field() -> None:
    assert split(_req(), _dep("openai_responses")) == (FIELDS["openai_responses"], [])


def test_reasoning_settings_are_dropped_for_a_model_without_reasoning() -> None:
    sent, dropped = split(_req(), _dep("openai_responses", "gpt-4.1-mini"))
    assert "reasoning" not in sent
    assert [(d["field"], d["values"]) for d in dropped] == [("reasoning.context", ["all_turns"])]
    assert "no reasoning" in dropped[0]["reason"]


def test_every_other_wire_api_gets_none_and_their_serving_names_are_dotted() -> None:
    for api in ("openai_chat", "anthropic_messages", "gemini", "litellm", "demo"):
        assert split(_req(), _dep(api)) == ({}, [])
    assert _req().native is not None
    assert _req().native.serving == [
        "client_metadata",
        "prompt_cache_key",
        "reasoning.context",
        "text.verbosity",
    ]


def test_the_other_openai_api_gets_the_shared_fields_translated() -> None:
    from gateway.providers.passthrough import sibling_fields

    fields = {"text": {"verbosity": "low"}, "service_tier": "ultrafast", "client_metadata": {"a": "b"}}
    native = NativeFields(api="openai_responses", fields=fields, serving=serving_names(fields))
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], native=native)
    assert sibling_fields(req, "openai_chat") == {"verbosity": "low"}  # no ultrafast tier in Chat
    assert sibling_fields(req, "anthropic_messages") == {}
    chat = NativeFields(api="openai_chat", fields={"verbosity": "high", "store": True}, paths=["verbosity"])
    req = req.model_copy(update={"native": chat})
    assert sibling_fields(req, "openai_responses") == {"text": {"verbosity": "high"}, "store": True}
