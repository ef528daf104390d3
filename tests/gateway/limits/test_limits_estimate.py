"""The cheap input-token bound of a budget reservation is never below the exact count."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.limits.estimate import input_token_bound
from gateway.providers import catalog
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

# the tokenizer families the exact count uses: tiktoken (o200k, cl100k), litellm's bundled
# Anthropic and DeepSeek tokenizers
MODELS = ["gpt-4o", "gpt-4", "claude-3-5-sonnet-20241022", "deepseek-chat"]

CODE = '''def parse(xs: list[int]) -> dict[str, int]:
    """Sum, {x}.\\n"""
    return {"total": sum(x * 2 for x in xs if x % 3 != 0)}  # ¬∀ → λ
'''
SAMPLES = [
    "Hello, world! How are you today?",
    "日本語のテキストは一文字で三バイトです。漢字とひらがな。",
    "Emoji 🎉🚀👩‍👩‍👧‍👦 and 🇫🇷 flags",
    "Ünïcödé àçcéñts — “quotes” … ½ ∑ ∫",
    "Русский текст и ελληνικά γράμματα",
    "مرحبا بالعالم",
    CODE,
    '{"json": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "   \n\n\t  lots   of    whitespace   \n",
    "a" * 1000,
    "0123456789" * 50,
    "",
]

text = st.one_of(st.sampled_from(SAMPLES), st.text(max_size=300))
schemas = st.recursive(
    st.sampled_from([{}, {"type": "string"}, {"type": "integer"}, {"enum": ["a", "b", "ç"]}]),
    lambda inner: (
        st.builds(
            lambda props, desc: {"type": "object", "properties": props, "description": desc},
            st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), inner, max_size=5),
            text,
        )
        | st.builds(lambda items: {"type": "array", "items": items}, inner)
    ),
    max_leaves=12,
)


@st.composite
def requests(draw: Any) -> Request:
    messages: list[Any] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(content=[TextPart(text=draw(text))]))
    for i in range(draw(st.integers(1, 4))):
        parts = [TextPart(text=draw(text)) for _ in range(draw(st.integers(1, 2)))]
        messages.append(UserMessage(content=parts))
        if draw(st.booleans()):
            call = ToolCallPart(id=f"call_{i}", name="f", arguments={}, raw_arguments=draw(text))
            messages.append(
                AssistantMessage(content=[TextPart(text=draw(text)), ThinkingPart(text=draw(text)), call])
            )
            messages.append(ToolResultMessage(tool_call_id=f"call_{i}", content=[TextPart(text=draw(text))]))
    names = st.from_regex(r"[a-z]{1,8}", fullmatch=True)
    tools = [
        ToolDefinition(
            name=draw(st.from_regex(r"[a-zA-Z_]{1,20}", fullmatch=True)),
            description=draw(st.none() | text),
            parameters={"type": "object", "properties": draw(st.dictionaries(names, schemas, max_size=4))},
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    return Request(model="m", messages=messages, tools=tools)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests(), st.sampled_from(MODELS))
def test_the_bound_is_never_below_the_exact_count(request: Request, model: str) -> None:
    bound = input_token_bound(request)
    assert bound is not None
    assert bound >= catalog.count_tokens(request, model)


def test_the_bound_holds_on_every_sample_with_every_tokenizer() -> None:
    for sample in SAMPLES:
        req = Request(model="m", messages=[UserMessage(content=[TextPart(text=sample * 3)])])
        bound = input_token_bound(req)
        assert bound is not None
        for model in MODELS:
            assert bound >= catalog.count_tokens(req, model), (sample, model)


def test_a_request_with_an_image_has_no_cheap_bound() -> None:
    req = Request(
        model="m",
        messages=[UserMessage(content=[TextPart(text="what is this"), ImagePart(url="https://x/a.png")])],
    )
    assert input_token_bound(req) is None


def test_the_bound_is_the_text_bytes_plus_fixed_overheads() -> None:
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="日本")])])
    assert input_token_bound(req) == 16 + 8 + 6


def test_the_bound_holds_for_tools_whose_rendering_outgrows_their_json() -> None:
    """An empty schema renders as ``any`` (longer than ``{}``); many short names, no types."""
    props: dict[str, Any] = {chr(97 + i % 26) * (1 + i // 26): {} for i in range(60)}
    nested: dict[str, Any] = {"x": {"type": "array", "items": {"type": "array", "items": {}}}}
    tools = [
        ToolDefinition(name="f", parameters={"type": "object", "properties": props}),
        ToolDefinition(name="g", parameters={"type": "object", "properties": nested, "required": ["x"]}),
        ToolDefinition(name="h"),
    ]
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="go")])], tools=tools)
    bound = input_token_bound(req)
    assert bound is not None
    for model in MODELS:
        assert bound >= catalog.count_tokens(req, model), model
