"""The target layer's rule for the schema's fields only some wire APIs have a slot for
(:mod:`gateway.layers.target_fields`): each reaches the APIs of its table without a note, is
named once per field (locations as values) toward any other, or, for a penalty, refused by name;
and the OpenAI Chat body sends names, ``developer`` and ``detail`` to OpenAI but not to litellm,
which reuses it."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.layers.target_fields import check_fields
from gateway.providers.naming import NameMap
from gateway.providers.openai_chat import to_wire_body
from gateway.schema import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    UserMessage,
)

ALL_APIS = ["anthropic_messages", "openai_chat", "openai_responses", "gemini", "litellm", "demo"]


def dep(api: str) -> Deployment:
    return Deployment(name="target", api=api, model="some-model")  # type: ignore[arg-type]


def named() -> Request:
    return Request(
        model="m",
        messages=[
            SystemMessage(content=[TextPart(text="rules")], developer=True, name="mod", src="messages[0]"),
            UserMessage(
                content=[
                    TextPart(text="look"),
                    ImagePart(url="https://x/y.png", detail="low"),
                    DocumentPart(data="JVBERi0=", media_type="application/pdf", filename="a.pdf", src="d"),
                ],
                name="alice",
                src="messages[1]",
            ),
            AssistantMessage(content=[TextPart(text="ok")], name="bot", src="messages[2]"),
        ],
        seed=3,
    )


def _fields(notes: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {n["field"]: n["values"] for n in notes}


@pytest.mark.parametrize(
    ("api", "dropped"),
    [
        ("openai_chat", {}),
        ("demo", {}),
        (
            "openai_responses",
            {"name": ["messages[0].name", "messages[1].name", "messages[2].name"], "seed": [3]},
        ),
        (
            "anthropic_messages",
            {
                "name": ["messages[0].name", "messages[1].name", "messages[2].name"],
                "seed": [3],
                "detail": ["messages[1].content[1]"],
            },
        ),
        (
            "gemini",
            {
                "name": ["messages[0].name", "messages[1].name", "messages[2].name"],
                "detail": ["messages[1].content[1]"],
                "filename": ["d"],
            },
        ),
    ],
)
def test_each_field_is_named_once_toward_an_api_without_its_slot(
    api: str, dropped: dict[str, list[Any]]
) -> None:
    notes = check_fields(named(), dep(api))
    assert _fields(notes) == dropped
    assert all(n["deployment"] == "target" and api in n["reason"] for n in notes)


@pytest.mark.parametrize("api", ALL_APIS)
def test_a_plain_request_names_nothing(api: str) -> None:
    plain = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")], src="messages[0]")])
    assert check_fields(plain, dep(api)) == []


@pytest.mark.parametrize("api", ALL_APIS)
def test_top_k_is_named_toward_an_api_without_it(api: str) -> None:
    plain = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], top_k=5)
    expected = {} if api in ("anthropic_messages", "gemini", "demo") else {"top_k": [5]}
    assert _fields(check_fields(plain, dep(api))) == expected


@pytest.mark.parametrize("api", ["anthropic_messages", "openai_responses", "litellm"])
@pytest.mark.parametrize("field", ["presence_penalty", "frequency_penalty"])
def test_a_penalty_toward_an_api_without_one_is_refused_by_name(field: str, api: str) -> None:
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], **{field: 0.5})
    with pytest.raises(CapabilityError) as exc:
        check_fields(request, dep(api))
    assert exc.value.param == field and api in str(exc.value)


@pytest.mark.parametrize("api", ["openai_chat", "gemini", "demo"])
def test_penalties_go_to_the_apis_that_have_them(api: str) -> None:
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], presence_penalty=1.0)
    assert check_fields(request, dep(api)) == []


def test_the_openai_chat_body_carries_names_developer_and_detail_to_openai_only() -> None:
    to_openai = to_wire_body(named(), dep("openai_chat"), NameMap())
    to_litellm = to_wire_body(named(), dep("litellm"), NameMap())
    assert [(m["role"], m.get("name")) for m in to_openai["messages"]] == [
        ("developer", "mod"),
        ("user", "alice"),
        ("assistant", "bot"),
    ]
    assert to_openai["messages"][1]["content"][1]["image_url"]["detail"] == "low"
    assert [(m["role"], m.get("name")) for m in to_litellm["messages"]] == [
        ("system", None),
        ("user", None),
        ("assistant", None),
    ]
    assert "detail" not in to_litellm["messages"][1]["content"][1]["image_url"]
    assert to_openai["seed"] == to_litellm["seed"] == 3


def _gemini_asks(**fields: Any) -> Request:
    return Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], **fields)


def test_a_refused_penalty_is_named_as_the_gemini_client_names_it() -> None:
    with pytest.raises(CapabilityError) as exc:
        check_fields(_gemini_asks(presence_penalty=0.5), dep("anthropic_messages"), "gemini")
    assert exc.value.param == "generationConfig.presencePenalty"
    assert str(exc.value).startswith("generationConfig.presencePenalty:")
    assert "presence_penalty" not in str(exc.value)


@pytest.mark.parametrize(
    ("dialect", "name"),
    [
        ("gemini", "generationConfig.stopSequences"),
        ("anthropic_messages", "stop_sequences"),
        ("openai_chat", "stop"),
    ],
)
def test_stop_sequences_toward_responses_are_refused_by_the_clients_own_name(dialect: str, name: str) -> None:
    with pytest.raises(CapabilityError) as exc:
        check_fields(_gemini_asks(stop=["END"]), dep("openai_responses"), dialect)
    assert exc.value.param == name


def test_a_dropped_seed_and_top_k_are_named_as_the_gemini_client_names_them() -> None:
    notes = check_fields(_gemini_asks(seed=3, top_k=5), dep("openai_responses"), "gemini")
    assert sorted(n["field"] for n in notes) == ["generationConfig.seed", "generationConfig.topK"]
