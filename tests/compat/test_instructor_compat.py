"""instructor through the gateway: ``from_openai`` (the gateway's ``/v1``) in its modes
``TOOLS``, ``JSON``, ``JSON_SCHEMA`` and ``RESPONSES_TOOLS``, and ``from_anthropic`` (the
gateway's root) in ``TOOLS``, each to every upstream API: the validated pydantic object comes
back and the upstream got the schema in the slot the mode puts it in.

Not here: ``from_anthropic`` ``JSON_SCHEMA``: instructor 1.17.0 looks for an ``output_format``
parameter of ``Messages.create``, which anthropic 2.x no longer has, and falls back to JSON-mode
instructions in the prompt (a ``UserWarning``) — nothing of the native slot reaches the gateway."""

from __future__ import annotations

from typing import Any

import anthropic
import instructor
import openai
import pytest
from pydantic import BaseModel
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR
from .framework_wire import (
    answer_value,
    declared_tools,
    forced_tool,
    json_mode,
    schema_props,
    schema_slot,
    system_texts,
)
from .scripts import only, user_texts

APIS = list(MODEL_FOR)
NATIVE_SLOT = {
    "openai_chat": "response_format",
    "openai_responses": "text.format",
    "anthropic_messages": "tool:json_output",  # the stand-in's Claude model has no native slot
    "gemini": "responseJsonSchema",  # gemini-3: JSON Schema as it is (gateway/providers/gemini_models.py)
}
# Where each (client, mode) puts the schema upstream: a forced tool named for the model, the
# native slot, or (JSON mode) the prompt with the API's JSON-object switch.
MODES: dict[str, tuple[str, instructor.Mode, str]] = {
    "from_openai(TOOLS)": ("openai", instructor.Mode.TOOLS, "tool"),
    "from_openai(JSON)": ("openai", instructor.Mode.JSON, "prompt"),
    "from_openai(JSON_SCHEMA)": ("openai", instructor.Mode.JSON_SCHEMA, "native"),
    "from_openai(RESPONSES_TOOLS)": ("openai", instructor.Mode.RESPONSES_TOOLS, "tool"),
    "from_anthropic(TOOLS)": ("anthropic", instructor.Mode.TOOLS, "tool"),
}
CHECKS = {
    "tool": "the schema reaches the upstream as the forced tool's parameters; the validated object "
    "comes back",
    "native": "the schema reaches the upstream's native slot (forced tool on a Claude model without "
    "one); the validated object comes back",
    "prompt": "the schema reaches the upstream in the system prompt with the JSON-object switch "
    "(response_format json_object, responseMimeType, the gateway's object tool on Claude); the "
    "validated object comes back",
}


class City(BaseModel):
    """A city and how many people live there."""

    name: str
    population: int


def _client(kind: str, mode: instructor.Mode, url: str) -> Any:
    if kind == "openai":
        oai = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-client-key", max_retries=0, timeout=15)
        return instructor.from_openai(oai, mode=mode)
    ant = anthropic.Anthropic(base_url=url, api_key="sk-ant-client-key", max_retries=0, timeout=15)
    return instructor.from_anthropic(ant, mode=mode)


@pytest.mark.parametrize(
    ("scenario", "api"),
    [
        pytest.param(
            scenario,
            api,
            id=f"{scenario}-{api}",
            marks=pytest.mark.compat(
                client="instructor", scenario=scenario, checks=CHECKS[MODES[scenario][2]]
            ),
        )
        for scenario in MODES
        for api in APIS
    ],
)
def test_mode_gets_the_validated_object_and_the_upstream_the_schema(
    scenario: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    kind, mode, where = MODES[scenario]
    answer_value(upstream, api, {"name": "Paris", "population": 2102650})
    client = _client(kind, mode, gateway_url)
    got = client.create(
        model=MODEL_FOR[api],
        response_model=City,
        messages=[{"role": "user", "content": "The biggest city of France?"}],
        max_tokens=256,
        max_retries=0,
    )
    assert isinstance(got, City)
    assert got.model_dump() == {"name": "Paris", "population": 2102650}
    (rec,) = only(upstream, api)
    assert "The biggest city of France?" in user_texts(rec)
    if where == "prompt":
        assert json_mode(rec) or schema_slot(rec)[0] == "tool:json_output", rec.body
        assert any("population" in t for t in system_texts(rec)), system_texts(rec)
        return
    if where == "tool":  # (RESPONSES_TOOLS sends the native text.format too, carried as well)
        assert forced_tool(api, rec.body) == "City"
        assert schema_props(declared_tools(api, rec.body)["City"]) == {"name", "population"}
        return
    slot, schema = schema_slot(rec)
    assert slot == NATIVE_SLOT[api]
    assert schema_props(schema) == {"name", "population"}


@pytest.mark.parametrize(
    ("scenario", "api"),
    [
        pytest.param(
            scenario,
            api,
            id=f"{scenario}-{api}",
            marks=pytest.mark.compat(
                client="instructor",
                scenario=f"{scenario}.create_partial",
                checks="the upstream is asked to stream with the schema as the forced tool; the "
                "partial objects end in the validated one",
            ),
        )
        for scenario in ("from_openai(TOOLS)", "from_anthropic(TOOLS)")
        for api in APIS
    ],
)
def test_partial_stream_ends_in_the_validated_object(
    scenario: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    kind, mode, _ = MODES[scenario]
    answer_value(upstream, api, {"name": "Paris", "population": 2102650})
    client = _client(kind, mode, gateway_url)
    partials = list(
        client.create_partial(
            model=MODEL_FOR[api],
            response_model=City,
            messages=[{"role": "user", "content": "The biggest city of France?"}],
            max_tokens=256,
            max_retries=0,
        )
    )
    assert partials[-1].model_dump() == {"name": "Paris", "population": 2102650}
    (rec,) = only(upstream, api)
    assert rec.stream
    name = forced_tool(api, rec.body)  # instructor names the streamed model's tool PartialCity
    assert name == "PartialCity"
    assert schema_props(declared_tools(api, rec.body)[name]) == {"name", "population"}
