"""Passed-through fields per deployment (gateway/providers/passthrough.py): sent to an upstream
of the client's own wire API (reasoning settings only to a reasoning model), named as dropped
toward every other."""

from __future__ import annotations

from gateway.config import Deployment
from gateway.providers.passthrough import split
from gateway.schema import Request, TextPart, UserMessage

FIELDS = {
    "openai_responses": {
        "prompt_cache_key": "k",
        "client_metadata": {"a": "b"},
        "text": {"verbosity": "low"},
        "reasoning": {"context": "all_turns"},
    }
}


def _req() -> Request:
    return Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], passthrough=FIELDS)


def _dep(api: str, model: str = "gpt-5") -> Deployment:
    return Deployment(name="d", api=api, model=model)  # type: ignore[arg-type]


def test_an_upstream_of_the_same_api_is_sent_every_field() -> None:
    assert split(_req(), _dep("openai_responses")) == (FIELDS["openai_responses"], [])


def test_reasoning_settings_are_dropped_for_a_model_without_reasoning() -> None:
    sent, dropped = split(_req(), _dep("openai_responses", "gpt-4.1-mini"))
    assert "reasoning" not in sent
    assert [(d["field"], d["values"]) for d in dropped] == [("reasoning.context", ["all_turns"])]
    assert "no reasoning" in dropped[0]["reason"]


def test_every_other_wire_api_drops_them_by_dotted_name() -> None:
    for api in ("openai_chat", "anthropic_messages", "gemini", "litellm", "demo"):
        sent, dropped = split(_req(), _dep(api))
        assert sent == {}
        assert [d["field"] for d in dropped] == [
            "client_metadata",
            "prompt_cache_key",
            "reasoning.context",
            "text.verbosity",
        ]
        assert dropped[0] == {
            "kind": "dropped",
            "field": "client_metadata",
            "values": [{"a": "b"}],
            "deployment": "d",
            "reason": f"only an upstream of the openai_responses wire API takes it; this one speaks {api}",
        }
