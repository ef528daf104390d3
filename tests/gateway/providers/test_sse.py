"""SSE framing: gateway/providers/sse.py."""

from __future__ import annotations

from _wire_helpers import FIXTURES
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gateway.providers.sse import SseDecoder, decode_all


def test_simple_events_with_names_are_dispatched_on_blank_lines() -> None:
    raw = b'event: ping\ndata: {}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'
    assert decode_all(raw) == [("ping", b"{}"), ("message_stop", b'{"type":"message_stop"}')]


def test_crlf_and_lone_cr_line_endings_are_accepted() -> None:
    assert decode_all(b"data: a\r\n\r\ndata: b\r\rdata: c\n\n") == [(None, b"a"), (None, b"b"), (None, b"c")]


def test_comments_id_and_retry_are_ignored() -> None:
    raw = b": OPENROUTER PROCESSING\n\nid: 7\nretry: 100\ndata: x\n\n"
    assert decode_all(raw) == [(None, b"x")]


def test_multi_line_data_is_joined_with_newline() -> None:
    assert decode_all(b'data: {"a":\ndata: 1}\n\n') == [(None, b'{"a":\n1}')]


def test_only_one_space_after_colon_is_stripped_and_padding_is_kept() -> None:
    assert decode_all(b"data:  x  \n\ndata:y\n\n") == [(None, b" x  "), (None, b"y")]


def test_event_without_data_is_not_dispatched() -> None:
    assert decode_all(b"event: ping\n\ndata: z\n\n") == [(None, b"z")]


def test_byte_order_mark_is_skipped_even_when_split() -> None:
    dec = SseDecoder()
    out = dec.feed(b"\xef") + dec.feed(b"\xbb") + dec.feed(b"\xbfdata: q\n\n") + dec.close()
    assert out == [(None, b"q")]


def test_close_dispatches_a_final_event_without_blank_line() -> None:
    assert decode_all(b'data: {"type":"message_stop" }') == [(None, b'{"type":"message_stop" }')]


def test_cr_at_chunk_end_waits_for_following_lf() -> None:
    dec = SseDecoder()
    assert dec.feed(b"data: a\r") == []
    assert dec.feed(b"\n\r\n") == [(None, b"a")]


def test_anthropic_recording_with_padding_decodes_every_event() -> None:
    raw = (
        FIXTURES / "anthropic-sdk-python/tests/lib/streaming/fixtures/incomplete_partial_json_response.txt"
    ).read_bytes()
    events = decode_all(raw)
    names = [e for e, _ in events]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    assert events[-1][1] == b'{"type":"message_stop" }'
    assert events[1][1].endswith(b"}         }")  # padding inside the data line is kept


@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=60))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    raw = (FIXTURES / "anthropic-sdk-python/tests/lib/streaming/fixtures/basic_response.txt").read_bytes()
    raw = raw.replace(b"\n", b"\r\n")
    whole = decode_all(raw)
    dec = SseDecoder()
    got = []
    pos = 0
    for c in cuts:
        got += dec.feed(raw[pos : pos + c])
        pos += c
    got += dec.feed(raw[pos:]) + dec.close()
    assert got == whole
    assert len(whole) == 9


_VALUE = st.binary(max_size=12).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
_LINE = st.one_of(
    _VALUE.map(lambda v: b"data: " + v),
    _VALUE.map(lambda v: b"data:" + v),
    st.just(b"data"),
    st.sampled_from([b"event: ", b"event:", b"event:  "]).flatmap(lambda p: _VALUE.map(lambda v: p + v)),
    _VALUE.map(lambda v: b":" + v),
    st.sampled_from([b"", b"", b"id: 7", b"retry: 100", b"foo: bar", b"dataX: y", b"event", b"\xef\xbb\xbf"]),
    st.just(b""),  # blank lines end events: often
    st.just(b""),
)


@settings(max_examples=400)
@given(
    st.lists(_LINE, max_size=30),
    st.booleans(),
    st.lists(st.integers(min_value=1, max_value=25), max_size=20),
)
@example([b"event: a", b"data: 1", b"", b"data: 2", b"", b""], True, [9])
@example([b"data: 1", b"", b"", b"event: e", b"data: 2", b"data: 3", b"", b": c", b"data: 4"], False, [])
def test_lf_only_streams_decode_as_crlf_streams_do(
    lines: list[bytes], final_lf: bool, cuts: list[int]
) -> None:
    """The LF-only fast path of ``feed`` follows the same rules as the general line splitter
    (used whenever a CR is present), for any lines and any chunking."""
    raw = b"\n".join(lines) + (b"\n" if final_lf else b"")
    reference = decode_all(raw.replace(b"\n", b"\r\n"))
    dec = SseDecoder()
    got = []
    pos = 0
    for c in cuts:
        got += dec.feed(raw[pos : pos + c])
        pos += c
    got += dec.feed(raw[pos:]) + dec.close()
    assert got == reference
    assert decode_all(raw) == reference
