"""The request log's search (gateway/console/turn_query.py) on SQLite and PostgreSQL: each filter
finds exactly its rows, a tool name matches a call or a result and never a tool merely offered,
LIKE wildcards in a value are literal, and pages cover every row once, newest first."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from console_support import Transcript

from gateway.access.model import Principal
from gateway.console.turn_query import Cursor, TurnFilter, one, page, parent_id, steps
from gateway.errors import InvalidRequest
from gateway.transcript import TurnRecord

WEATHER_TOOL = {"name": "get_weather", "parameters": {"type": "object"}}


def _call(name: str, call_id: str = "c1") -> dict[str, Any]:
    return {
        "id": "resp",
        "model": "m",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "tool_call", "id": call_id, "name": name, "arguments": {}, "raw_arguments": "{}"}
            ],
        },
        "stop_reason": "tool_use",
        "usage": {},
    }


def _text_answer(text: str = "done") -> dict[str, Any]:
    return {
        "id": "resp",
        "model": "m",
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        "stop_reason": "stop",
        "usage": {},
    }


def _ask(*messages: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages), "tools": tools or []}


USER = {"role": "user", "content": [{"type": "text", "text": "weather in Paris?"}]}


def _who(key: str, team: str | None) -> Principal:
    return Principal(key_id=key, key_name=key, team_id=team, team_name=team, expires_at=None)


def _rows() -> list[TurnRecord]:
    base: dict[str, Any] = {"client_dialect": "openai_chat", "stream": False}
    return [
        TurnRecord(
            request_id="aaa1",
            ts=1000.0,
            requested_model="default",
            deployment="cheap",
            status=200,
            request=_ask(USER, tools=[WEATHER_TOOL]),
            response=_call("get_weather"),
            session_id="s1",
            principal=_who("key-a", "team-x"),
            **base,
        ),
        TurnRecord(
            request_id="aaa2",
            ts=1001.0,
            requested_model="default",
            deployment="strong",
            status=502,
            error="upstream said no",
            request=_ask(USER),
            principal=_who("key-b", None),
            **base,
        ),
        TurnRecord(
            request_id="bbb3",
            ts=1002.0,
            requested_model="other",
            deployment="cheap",
            status=200,
            guard_outcome="repaired",
            request=_ask(
                {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": []},
                tools=[WEATHER_TOOL],
            ),
            response=_text_answer(),
            session_id="s1",
            **base,
        ),
        TurnRecord(
            request_id="bbb4",
            ts=1003.0,
            requested_model="other",
            status=400,
            guard_outcome="rejected",
            error="tool call c9 has no result",
            request=_ask(USER, tools=[WEATHER_TOOL]),
            **base,
        ),
        TurnRecord(
            request_id="ccc5.step1",
            ts=1004.0,
            requested_model="with-time",
            deployment="cheap",
            status=200,
            request=_ask(USER),
            response=_call("time__get_current_time"),
            **base,
        ),
        TurnRecord(
            request_id="ccc5",
            ts=1005.0,
            requested_model="with-time",
            deployment="cheap",
            status=200,
            request=_ask(USER),
            response=_text_answer("it is noon"),
            **base,
        ),
        TurnRecord(
            request_id="ddd7",
            ts=1006.0,
            requested_model="default",
            deployment="cheap",
            status=200,
            request=_ask(USER, tools=[{"name": "get%weather"}]),
            response=_call("get%weather"),
            **base,
        ),
        TurnRecord(  # the weather tool offered, the model answered in text: not a call of it
            request_id="ddd8",
            ts=1006.0,
            requested_model="default",
            deployment="cheap",
            status=200,
            request=_ask(USER, tools=[WEATHER_TOOL]),
            response=_text_answer("get_weather is a tool I could call"),
            **base,
        ),
    ]


async def _ids(transcript: Transcript, **where: str) -> list[str]:
    rows, cursor = await page(transcript.reader, TurnFilter(**where), size=100)
    assert cursor is None
    return [r["request_id"] for r in rows]


async def test_each_filter_finds_exactly_its_rows_newest_first(transcript: Transcript) -> None:
    await transcript.load(_rows())
    assert await _ids(transcript) == ["ddd8", "ddd7", "ccc5", "ccc5.step1", "bbb4", "bbb3", "aaa2", "aaa1"]
    assert await _ids(transcript, request_id="aaa") == ["aaa2", "aaa1"]
    assert await _ids(transcript, request_id="ccc5") == ["ccc5", "ccc5.step1"]
    assert await _ids(transcript, model="other") == ["bbb4", "bbb3"]
    assert await _ids(transcript, deployment="strong") == ["aaa2"]
    assert await _ids(transcript, outcome="ok") == ["ddd8", "ddd7", "ccc5", "ccc5.step1", "bbb3", "aaa1"]
    assert await _ids(transcript, outcome="error") == ["bbb4", "aaa2"]
    assert await _ids(transcript, outcome="4xx") == ["bbb4"]
    assert await _ids(transcript, outcome="5xx") == ["aaa2"]
    assert await _ids(transcript, guard="repaired") == ["bbb3"]
    assert await _ids(transcript, guard="rejected") == ["bbb4"]
    assert await _ids(transcript, session="s1") == ["bbb3", "aaa1"]
    assert await _ids(transcript, key="key-a") == ["aaa1"]
    assert await _ids(transcript, team="team-x") == ["aaa1"]
    assert await _ids(transcript, model="default", outcome="ok") == ["ddd8", "ddd7", "aaa1"]
    assert await _ids(transcript, session="nope") == []


async def test_a_tool_name_matches_its_calls_and_results_never_a_tool_only_offered(
    transcript: Transcript,
) -> None:
    await transcript.load(_rows())
    # aaa1 called it, bbb3 sent its result back; bbb4 and ddd8 only offered it
    assert await _ids(transcript, tool="get_weather") == ["bbb3", "aaa1"]
    assert await _ids(transcript, tool="time__get_current_time") == ["ccc5.step1"]  # the loop's step
    assert await _ids(transcript, tool="get%weather") == ["ddd7"]  # wildcards are literal
    assert await _ids(transcript, tool="get%") == []
    assert await _ids(transcript, tool="get_weather", session="s1", outcome="ok") == ["bbb3", "aaa1"]


async def test_pages_cover_every_row_once_in_order_with_ties_on_the_time(transcript: Transcript) -> None:
    await transcript.load(_rows())
    seen: list[str] = []
    cursor: Cursor | None = None
    pages = 0
    while True:
        rows, cursor = await page(transcript.reader, TurnFilter(), cursor, size=3)
        seen += [r["request_id"] for r in rows]
        pages += 1
        if cursor is None:
            break
        assert Cursor.parse(cursor.token()) == cursor  # the token reads back exactly
    assert pages == 3
    assert seen == ["ddd8", "ddd7", "ccc5", "ccc5.step1", "bbb4", "bbb3", "aaa2", "aaa1"]
    rows, cursor = await page(transcript.reader, TurnFilter(deployment="cheap"), None, size=2)
    assert [r["request_id"] for r in rows] == ["ddd8", "ddd7"] and cursor is not None
    rows, _ = await page(transcript.reader, TurnFilter(deployment="cheap"), cursor, size=2)
    assert [r["request_id"] for r in rows] == ["ccc5", "ccc5.step1"]


async def test_a_page_never_reads_the_request_and_answer_json_and_one_row_reads_them_all(
    transcript: Transcript,
) -> None:
    await transcript.load(_rows())
    rows, _ = await page(transcript.reader, TurnFilter(), size=1)
    assert "request" not in rows[0] and "response" not in rows[0] and rows[0]["session_id"] is None
    row = await one(transcript.reader, "aaa1")
    assert row is not None and '"get_weather"' in row["response"] and row["session_id"] == "s1"
    assert row["key_id"] == "key-a" and row["team_id"] == "team-x"
    assert await one(transcript.reader, "nope") is None
    assert [r["request_id"] for r in await steps(transcript.reader, "ccc5")] == ["ccc5.step1"]
    assert await steps(transcript.reader, "aaa1") == []


async def test_a_missing_sqlite_transcript_reads_as_empty(tmp_path: Any) -> None:
    from gateway.console.transcript_reader import TranscriptReader

    reader = TranscriptReader(str(tmp_path / "never-written.db"))
    assert await page(reader, TurnFilter()) == ([], None)
    await reader.close()


async def test_a_row_whose_json_is_not_valid_never_breaks_a_tool_search_on_sqlite(tmp_path: Any) -> None:
    t = Transcript(str(tmp_path / "t.db"))
    await t.load(_rows()[:1])
    conn = sqlite3.connect(t.location)
    conn.execute(
        "INSERT INTO turns (request_id, ts, client_dialect, stream, status, response, request) "
        "VALUES ('bad', 2000, 'x', 0, 200, '{\"message\": {\"content\": [get_weather', 'get_weather ]')"
    )
    conn.commit()
    conn.close()
    assert await _ids(t, tool="get_weather") == ["aaa1"]
    await t.reader.close()


def test_filters_read_from_a_query_string_refuse_bad_values_by_name() -> None:
    flt = TurnFilter.parse({"request_id": " AB12 ", "tool": "x", "outcome": "", "page": "ignored"})
    assert flt == TurnFilter(request_id="ab12", tool="x")
    assert flt.query() == {"request_id": "ab12", "tool": "x"} and not flt.is_empty()
    assert TurnFilter.parse({}).is_empty()
    for params, name in (
        ({"outcome": "maybe"}, "outcome"),
        ({"guard": "shrug"}, "guard"),
        ({"model": "m" * 201}, "model"),
        ({"tool": "a\x00b"}, "tool"),
    ):
        with pytest.raises(InvalidRequest) as err:
            TurnFilter.parse(params)
        assert err.value.param == name
    for token in ("nonsense", "1.5~", "nan~x", "x~y"):
        with pytest.raises(InvalidRequest) as err:
            Cursor.parse(token)
        assert err.value.param == "before"
    assert Cursor.parse("") is None and Cursor.parse(None) is None


def test_a_step_row_names_its_turn() -> None:
    assert parent_id("abc.step2") == "abc" and parent_id("abc") is None and parent_id("a.stepx") is None
