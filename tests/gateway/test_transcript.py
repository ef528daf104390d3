from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.transcript import TranscriptWriter, TurnRecord, recent


def _record(i: int) -> TurnRecord:
    return TurnRecord(
        request_id=f"r{i}",
        ts=1000.0 + i,
        client_dialect="openai_chat",
        requested_model="demo",
        stream=False,
        status=200,
        deployment="demo",
        usage={"input_tokens": 3, "output_tokens": 4},
        cost_usd=0.0,
        request={"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
    )


async def test_every_appended_turn_is_written_before_close_returns(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db, maxsize=8, batch=3)
    await writer.start()
    for i in range(50):
        await writer.append(_record(i))
    await writer.close()
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM turns").fetchone()
    assert rows == (50,)


async def test_recent_returns_newest_first_with_usage_columns(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db)
    await writer.start()
    for i in range(5):
        await writer.append(_record(i))
    await writer.flush()
    rows = recent(db, limit=2)
    await writer.close()
    assert [r["request_id"] for r in rows] == ["r4", "r3"]
    assert rows[0]["input_tokens"] == 3 and rows[0]["output_tokens"] == 4


def test_a_record_holding_schema_models_stores_the_same_row_as_one_holding_their_dumps() -> None:
    from gateway.schema import (
        AssistantMessage,
        Request,
        Response,
        TextPart,
        Usage,
        UserMessage,
        WithheldToolCall,
    )

    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], max_output_tokens=5)
    response = Response(
        id="r",
        model="m",
        message=AssistantMessage(content=[TextPart(text="yo")]),
        stop_reason="stop",
        usage=Usage(input_tokens=3, output_tokens=4, cost_usd=0.5),
    )
    withheld = [WithheldToolCall(id="c1", name="f", raw_arguments="{", reason="length")]
    common = dict(
        request_id="x",
        ts=1.0,
        client_dialect="openai_chat",
        requested_model="m",
        stream=False,
        status=200,
        cost_usd=0.5,
    )
    as_models = TurnRecord(
        **common,
        usage=response.usage,
        withheld=withheld,
        request=request,  # type: ignore[arg-type]
        response=response,
    )
    as_dicts = TurnRecord(
        **common,  # type: ignore[arg-type]
        usage=response.usage.model_dump(),
        withheld=[w.model_dump() for w in withheld],
        request=request.model_dump(mode="json", exclude_none=True),
        response=response.model_dump(mode="json"),
    )
    assert as_models.row() == as_dicts.row()
