"""Model catalog: prices and context windows from litellm's bundled table, token estimates."""

from __future__ import annotations

import pytest

from gateway.config import Deployment, Price
from gateway.providers import catalog
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)


def dep(model: str, api: str = "openai_chat", **kw: object) -> Deployment:
    return Deployment(name="d", api=api, model=model, **kw)  # type: ignore[arg-type]


def test_claude_sonnet_4_5_price_from_bundled_table_per_million_tokens() -> None:
    price = catalog.resolve_price(dep("claude-sonnet-4-5", api="anthropic_messages"))
    assert price == Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75, reasoning=None)


def test_gpt_4_1_mini_price_from_bundled_table() -> None:
    price = catalog.resolve_price(dep("gpt-4.1-mini"))
    assert (price.input, price.output, price.cache_read) == (0.4, 1.6, 0.1)


def test_override_wins_field_by_field() -> None:
    price = catalog.resolve_price(dep("gpt-4.1-mini", price=Price(output=2.0, cache_write=0.5)))
    assert price == Price(input=0.4, output=2.0, cache_read=0.1, cache_write=0.5, reasoning=None)


def test_provider_prefixed_litellm_model_finds_the_bare_entry() -> None:
    price = catalog.resolve_price(dep("anthropic/claude-sonnet-4-5", api="litellm"))
    assert price.input == 3.0


def test_unknown_model_has_no_price_unless_overridden() -> None:
    assert catalog.resolve_price(dep("no-such-model-xyz")) == Price()
    assert catalog.resolve_price(dep("no-such-model-xyz", price=Price(input=1.0))) == Price(input=1.0)


def test_context_window_from_table_and_deployment_override() -> None:
    assert catalog.context_window(dep("claude-sonnet-4-5", api="anthropic_messages")) == 200_000
    assert catalog.context_window(dep("gpt-4.1-mini", context_window=8000)) == 8000
    assert catalog.context_window(dep("no-such-model-xyz")) is None


def test_table_lookups_are_cached() -> None:
    catalog.table_price.cache_clear()
    catalog.model_info.cache_clear()
    catalog.resolve_price(dep("gpt-4.1-mini"))
    catalog.resolve_price(dep("gpt-4.1-mini"))
    catalog.context_window(dep("gpt-4.1-mini"))
    assert catalog.table_price.cache_info().hits == 1
    assert catalog.model_info.cache_info().hits == 1


def _request() -> Request:
    return Request(
        model="m",
        messages=[
            SystemMessage(content=[TextPart(text="You are terse.")]),
            UserMessage(
                content=[TextPart(text="What is in this picture?"), ImagePart(url="https://x/y.png")]
            ),
            AssistantMessage(content=[ToolCallPart(id="c1", name="look", raw_arguments='{"q":"cat"}')]),
            ToolResultMessage(tool_call_id="c1", content=[TextPart(text="a cat on a mat")]),
        ],
        tools=[ToolDefinition(name="look", description="Look closer", parameters={"type": "object"})],
    )


def test_count_tokens_estimates_messages_and_tools_without_network() -> None:
    n = catalog.count_tokens(_request(), "gpt-4.1-mini")
    assert 30 < n < 400
    text_only = Request(model="m", messages=[UserMessage(content=[TextPart(text="hello world")])])
    assert 2 <= catalog.count_tokens(text_only, "gpt-4.1-mini") <= 12


def test_count_tokens_falls_back_to_length_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    def boom(**_: object) -> int:
        raise RuntimeError("no tokenizer")

    monkeypatch.setattr(litellm, "token_counter", boom)
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="x" * 400)])])
    assert catalog.count_tokens(req, "gpt-4.1-mini") >= 100


def test_a_count_on_the_event_loop_never_waits_for_the_tokenizer_import() -> None:
    """``wait=False`` answers the length estimate at once while litellm is not imported, and
    starts the import in a thread of its own (a fresh interpreter: this one has litellm)."""
    import subprocess
    import sys

    code = """
import sys, threading
from gateway.providers import catalog
from gateway.schema import Request, TextPart, UserMessage
req = Request(model="m", messages=[UserMessage(content=[TextPart(text="hello " * 50)])])
n = catalog.count_tokens(req, "gpt-4o", wait=False)
assert "litellm" not in sys.modules or not catalog._TOKENIZER["ready"], "imported on the caller's thread"
loader = next(t for t in threading.enumerate() if t.name == "tokenizer-import")
loader.join(120)
assert catalog._TOKENIZER["ready"]
print(n, catalog.count_tokens(req, "gpt-4o", wait=False))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin"},
        cwd=str(__import__("pathlib").Path(__file__).resolve().parents[3]),
    )
    assert out.returncode == 0, out.stderr
    estimate, counted = map(int, out.stdout.split())
    assert estimate > 0 and counted > 0


def test_responses_deployments_use_the_same_catalog_as_chat_deployments() -> None:
    from gateway.config import Deployment
    from gateway.providers.catalog import context_window, resolve_price

    chat = Deployment(name="c", api="openai_chat", model="gpt-4o-mini")
    responses = Deployment(name="r", api="openai_responses", model="gpt-4o-mini")
    assert resolve_price(responses) == resolve_price(chat)
    assert resolve_price(responses).input is not None
    assert context_window(responses) == context_window(chat) is not None


def test_a_bound_before_the_tokenizer_is_ready_is_never_below_the_real_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hard budget's worst case (``bound``) while litellm is not imported yet is the text's
    UTF-8 length: above the tokenizer's count even for CJK text, which ``// 4`` undercounts."""
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="\U00020000\U0002a6df" * 500)])])
    real = catalog.count_tokens(req, "gpt-4o")
    monkeypatch.setitem(catalog._TOKENIZER, "ready", False)
    monkeypatch.setitem(catalog._TOKENIZER, "loading", True)  # no import thread started here
    assert catalog.count_tokens(req, "gpt-4o", wait=False) < real
    assert catalog.count_tokens(req, "gpt-4o", wait=False, bound=True) >= real
