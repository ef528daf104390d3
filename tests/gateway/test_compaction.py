"""Compaction: structured summaries appended as entries, on both stores, over the real Pi
sessions of the corpus (a small slice always; the whole files when the corpus is present)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pi_corpus import FIXTURE, FIXTURE_FIRST_INDEX, load_into, pi_files, read_objects, to_entries

from gateway import invariants
from gateway.compaction import SECTIONS, SYSTEM_PROMPT, compact, deployment_summarizer
from gateway.config import Deployment, GuardPolicy
from gateway.context import Budget, build_context
from gateway.providers.demo import DemoProvider
from gateway.schema import Request, TextPart, UserMessage
from gateway.sessions.store import SqlSessionStore

STRICT = GuardPolicy(pairing="reject", ordering="strict")


class ScriptedSummarizer:
    """Answers every summary request with a structured summary; records the requests."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def __call__(self, request: Request) -> str:
        self.requests.append(request)
        n = len(self.requests)
        return "\n".join(f"## {s}\nsection {s.lower()} after chunk {n}" for s in SECTIONS)


def user_text(req: Request) -> str:
    msg = req.messages[-1]
    assert isinstance(msg, UserMessage) and isinstance(msg.content[0], TextPart)
    return msg.content[0].text


def assert_paired(messages: list) -> None:  # type: ignore[type-arg]
    out = invariants.check_request(Request(model="m", messages=messages), STRICT)
    assert not out.repairs


async def test_compacting_the_pi_slice_fits_the_budget_and_keeps_calls_with_results(
    store: SqlSessionStore,
) -> None:
    entries = to_entries(read_objects(FIXTURE), "pi", first_index=FIXTURE_FIRST_INDEX)
    ids = await load_into(store, "pi", entries)
    budget = Budget(window=24_000, reserved_output=2_000, margin=1_000)
    before = build_context(await store.path("pi"), budget)
    assert before.summary and before.summary.startswith("# Context Checkpoint Summary")  # the real compaction
    assert not before.fits or before.dropped  # too long for this window

    summarizer = ScriptedSummarizer()
    entry = await compact(
        store, "pi", summarizer=summarizer, budget=budget, reason="window", chunk_tokens=8_000
    )
    assert entry is not None and entry.type == "compaction"
    payload = entry.compaction()
    assert payload is not None and payload.reason == "window"
    assert payload.tokens_before == before.tokens_all > payload.tokens_after
    assert len(summarizer.requests) >= 2  # folded chunk by chunk
    assert "# Context Checkpoint Summary" in user_text(
        summarizer.requests[0]
    )  # updated from the previous one
    assert "after chunk 1" in user_text(summarizer.requests[1])
    assert summarizer.requests[0].messages[0].content[0].text == SYSTEM_PROMPT  # type: ignore[union-attr]

    after = build_context(await store.path("pi"), budget)
    assert after.fits and after.tokens <= budget.available
    assert after.summary == payload.summary and after.compaction_id == entry.id
    assert payload.first_kept_entry_id == after.first_kept_entry_id
    assert payload.tokens_after == after.tokens_all
    assert_paired(after.messages)
    # the log still holds every original entry, plus the compaction
    stored = await store.entries("pi")
    assert [e.id for e in stored[:-1]] == list(ids.values()) and stored[-1].id == entry.id
    # rebuilding twice is byte-identical
    assert build_context(await store.path("pi"), budget).to_bytes() == after.to_bytes()


async def test_the_demo_deployment_can_be_the_summariser(store: SqlSessionStore) -> None:
    entries = to_entries(read_objects(FIXTURE), "pi", first_index=FIXTURE_FIRST_INDEX)
    await load_into(store, "pi", entries)
    demo = Deployment(name="demo", api="demo", model="turnstile-demo")
    summarizer = deployment_summarizer(DemoProvider(), demo, None)
    entry = await compact(store, "pi", summarizer=summarizer, budget=20_000, deployment="demo")
    assert entry is not None and entry.payload["deployment"] == "demo" and entry.payload["summary"]
    ctx = build_context(await store.path("pi"), 20_000)
    assert ctx.fits
    assert_paired(ctx.messages)


async def test_a_single_group_has_nothing_to_compact(store: SqlSessionStore) -> None:
    await store.append(
        "s", "message", {"message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}
    )
    assert await compact(store, "s", summarizer=ScriptedSummarizer(), budget=10) is None
    assert len(await store.entries("s")) == 1


async def test_a_failing_summariser_appends_nothing(store: SqlSessionStore) -> None:
    entries = to_entries(read_objects(FIXTURE), "pi", first_index=FIXTURE_FIRST_INDEX)
    await load_into(store, "pi", entries)
    n = len(await store.entries("pi"))

    async def broken(request: Request) -> str:
        raise RuntimeError("summariser down")

    with pytest.raises(RuntimeError):
        await compact(store, "pi", summarizer=broken, budget=20_000)
    assert len(await store.entries("pi")) == n


@pytest.mark.skipif(not pi_files(), reason="corpus pi-mono/ is absent (set TURNSTILE_CORPUS)")
@pytest.mark.parametrize("path", pi_files(), ids=lambda p: Path(p).name)
async def test_whole_pi_sessions_compact_to_a_small_window(path: Path, tmp_path: Path) -> None:
    from gateway.sessions.sqlite import SqliteSessionStore

    store = SqliteSessionStore(tmp_path / "s.db")
    await store.open()
    try:
        entries = to_entries(read_objects(path), path.stem)
        await load_into(store, "pi", entries)
        budget = Budget(window=32_000, reserved_output=4_000, margin=1_600)
        original = build_context(await store.path("pi"), Budget(window=10**9))
        assert_paired(original.messages)  # real compactions and aborted turns rebuild cleanly
        entry = await compact(store, "pi", summarizer=ScriptedSummarizer(), budget=budget, reason="window")
        if entry is None:  # compact.jsonl ends on a real compaction that kept nothing: one summary, no group
            assert len(original.kept) < 2
        ctx = build_context(await store.path("pi"), budget)
        assert ctx.fits and ctx.tokens <= budget.available
        assert_paired(ctx.messages)
        assert len(await store.entries("pi")) == len(entries) + (entry is not None)
    finally:
        await store.close()
