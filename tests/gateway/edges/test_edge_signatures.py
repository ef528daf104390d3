"""Signature and tool-call-id envelopes round-trip; wrapped ids keep Anthropic's id rule."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.edges.signatures import (
    unwrap_signature,
    unwrap_tool_call_id,
    wrap_signature,
    wrap_tool_call_id,
)
from gateway.schema import Provenance

ID_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
provs = st.builds(Provenance, api=st.text(min_size=1), provider=st.text(), model=st.text())
ids = st.from_regex(r"[a-zA-Z0-9_-]{1,40}", fullmatch=True)


@given(sig=st.text(), prov=provs)
def test_wrapped_signature_round_trips(sig: str, prov: Provenance) -> None:
    assert unwrap_signature(wrap_signature(sig, prov)) == (sig, prov)


@given(sig=st.text().filter(lambda s: not s.startswith("tsig1.")))
def test_raw_signature_has_no_provenance(sig: str) -> None:
    assert unwrap_signature(sig) == (sig, None)


def test_damaged_signature_envelope_raises_value_error() -> None:
    with pytest.raises(ValueError):
        unwrap_signature("tsig1.!!!.sig")
    with pytest.raises(ValueError):
        unwrap_signature("tsig1.nodot")


@given(id=ids, sig=st.text(), prov=provs)
def test_wrapped_tool_call_id_round_trips_and_matches_anthropic_id_rule(
    id: str, sig: str, prov: Provenance
) -> None:
    wrapped = wrap_tool_call_id(id, sig, prov)
    assert ID_RE.match(wrapped)
    assert unwrap_tool_call_id(wrapped) == (id, sig, prov)


@given(id=ids)
def test_plain_tool_call_id_is_unchanged(id: str) -> None:
    assert unwrap_tool_call_id(id) == (id, None, None) or "__ts1_" in id


def test_c17_gemini_signature_survives_in_the_id() -> None:
    prov = Provenance(api="gemini", provider="google", model="gemini-2.5-pro")
    wrapped = wrap_tool_call_id("call_shell_0", "SIG_G1_opaque", prov)
    assert unwrap_tool_call_id(wrapped) == ("call_shell_0", "SIG_G1_opaque", prov)
    assert unwrap_tool_call_id("call__ts1_garbage") == ("call__ts1_garbage", None, None)
