"""Readers of recorded provider traffic and the independent meaning reader
(gateway/providers/recorded/*), on fixtures copied from the corpus (see ORIGIN.md files)."""

from __future__ import annotations

from pathlib import Path

import orjson

from gateway.providers.recorded import meaning, readers
from gateway.providers.sse import decode_all

FIX = Path(__file__).resolve().parents[3] / "fixtures"


def test_go_vcr_cassette_exchanges_and_urls() -> None:
    path = (
        FIX / "fantasy/providertests/testdata/TestAnthropicThinking/claude-sonnet-4/thinking-streaming.yaml"
    )
    exs, issues = readers.read_cassette(path, "c.yaml")
    assert issues == [] and len(exs) == 2
    assert all(e.stream and e.status == 200 for e in exs)
    assert readers.api_of_url(exs[0].url)[0] == "anthropic_messages"
    assert isinstance(exs[0].request, dict) and exs[0].request["messages"]


def test_anthropic_stream_meaning_has_thinking_signature_and_tool_call() -> None:
    path = (
        FIX / "fantasy/providertests/testdata/TestAnthropicThinking/claude-sonnet-4/thinking-streaming.yaml"
    )
    ex = readers.read_cassette(path, "c.yaml")[0][0]
    objs = [orjson.loads(d) for _, d in decode_all(ex.body)]
    m = meaning.anthropic_events(objs)
    assert m.thinking and m.thinking[0][1], "signature kept"
    assert m.calls and m.stop == "tool_use"
    assert m.usage["output"] > 0


def test_truncated_stream_meaning_keeps_partial_arguments_and_length() -> None:
    exs, _ = readers.read_raw_sse(
        FIX / "anthropic-sdk-python/tests/lib/streaming/fixtures/incomplete_partial_json_response.txt",
        "s.txt",
    )
    objs = [orjson.loads(d) for _, d in decode_all(exs[0].body)]
    m = meaning.anthropic_events(objs)
    assert m.stop == "length" and m.calls[0].name == "make_file"


def test_url_classification_reports_non_chat_apis() -> None:
    assert readers.api_of_url("https://api.openai.com/v1/chat/completions") == ("openai_chat", "")
    assert (
        readers.api_of_url("https://x/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")[0]
        == "gemini"
    )
    assert readers.api_of_url("https://api.openai.com/v1/responses") == ("openai_responses", "")
    assert readers.api_of_url("https://api.openai.com/v1/responses/resp_1/input_items")[0] is None
    assert readers.api_of_url("https://bedrock-runtime.us-east-1.amazonaws.com/model/x/converse")[0] is None


def test_malformed_cassette_is_an_issue_with_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("interactions:\n  - request: [\n")
    exs, issues = readers.read_cassette(bad, "bad.yaml")
    assert exs == [] and issues[0].line is not None


def test_vercel_chunk_line_that_is_not_json_is_reported(tmp_path: Path) -> None:
    f = tmp_path / "x.chunks.txt"
    f.write_text('{"type":"message_start","message":{"usage":{}}}\nnot json\n')
    exs, issues = readers.read_vercel_chunks(f, "x.chunks.txt")
    assert len(exs) == 1 and [(i.line, i.file) for i in issues] == [(2, "x.chunks.txt")]


def test_vercel_chunks_of_several_responses_streams_are_one_exchange_each(tmp_path: Path) -> None:
    f = tmp_path / "x.chunks.txt"
    f.write_text('{"type":"response.created"}\n{"type":"response.completed"}\n' * 2)
    exs, _ = readers.read_vercel_chunks(f, "x.chunks.txt")
    assert [e.name for e in exs] == ["stream 1", "stream 2"]
    assert all(e.body.count(b"response.created") == 2 for e in exs)  # event line and data


def test_openai_usage_with_reasoning_outside_completion_is_added() -> None:
    m = meaning.openai_body(
        {
            "choices": [{"message": {"content": "x"}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 28,
                "completion_tokens": 9,
                "completion_tokens_details": {"reasoning_tokens": 61},
            },
        }
    )
    assert m.usage["output"] == 70 and m.stop == "stop"
