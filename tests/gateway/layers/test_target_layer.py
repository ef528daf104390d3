"""The target layer's capability check: fields a client sent for one wire API go only to a
deployment of that API."""

from __future__ import annotations

import pytest

from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.layers.target import check_capabilities
from gateway.schema import NativeFields, Request, TextPart, UserMessage

REQ = Request(
    model="m",
    messages=[UserMessage(content=[TextPart(text="hi")])],
    native=NativeFields(api="gemini", fields={"safetySettings": []}, paths=["safetySettings"]),
)


def test_native_fields_pass_to_a_deployment_of_their_wire_api() -> None:
    check_capabilities(REQ, Deployment(name="ge", api="gemini", model="gemini-2.5-pro"))


def test_native_fields_are_refused_by_name_toward_another_wire_api() -> None:
    with pytest.raises(CapabilityError) as info:
        check_capabilities(REQ, Deployment(name="oa", api="openai_chat", model="gpt-4o"))
    assert info.value.param == "safetySettings"
    assert "'oa'" in info.value.message and "gemini" in info.value.message
