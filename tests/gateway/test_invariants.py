"""Pairing and ordering guard (gateway.invariants.check_request) and the handed cases C01, C02,
C04, C05, C19, C22 at the guard level. Inputs are converted by hand from
/work/shared/cases/handed.jsonl into schema objects, with the ``src`` locations the edges set."""

from __future__ import annotations

import orjson
import pytest

from gateway.config import GuardPolicy
from gateway.errors import GuardViolation
from gateway.invariants import MISSING_RESULT_TEXT, GuardOutcome, check_request
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

REJECT = GuardPolicy()
REPAIR = GuardPolicy(pairing="repair")
STRICT = GuardPolicy(ordering="strict")


def user(text: str, src: str | None = None) -> UserMessage:
    return UserMessage(content=[TextPart(text=text)], src=src)


def call(
    cid: str, name: str = "bash", args: dict | None = None, raw: str | None = None, src: str | None = None
) -> ToolCallPart:
    args = {} if args is None else args
    return ToolCallPart(
        id=cid,
        name=name,
        arguments=args,
        raw_arguments=raw if raw is not None else orjson.dumps(args).decode(),
        src=src,
    )


def assistant(*parts: ToolCallPart | TextPart, src: str | None = None) -> AssistantMessage:
    return AssistantMessage(content=list(parts), src=src)


def result(cid: str, text: str = "ok", src: str | None = None) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=cid, content=[TextPart(text=text)], src=src)


def req(*messages: Message) -> Request:
    return Request(model="m", messages=list(messages))


def violation(request: Request, policy: GuardPolicy = REJECT) -> GuardViolation:
    with pytest.raises(GuardViolation) as info:
        check_request(request, policy)
    return info.value


def layout(messages: list[Message]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, ToolResultMessage):
            out.append(f"tool:{m.tool_call_id}")
        elif isinstance(m, AssistantMessage):
            out.append("assistant:" + ",".join(c.id for c in m.tool_calls))
        else:
            out.append(m.role)
    return out


# ----------------------------------------------------------------------------- handed cases


def c01_request() -> Request:
    return req(
        user("Show me the folder contents and the working directory.", src="messages[0]"),
        assistant(
            call("call_1", args={"cmd": "ls"}, raw='{"cmd":"ls"}', src="messages[1].tool_calls[0]"),
            call("call_2", args={"cmd": "pwd"}, raw='{"cmd":"pwd"}', src="messages[1].tool_calls[1]"),
            src="messages[1]",
        ),
        result("call_1", "README.md\nsrc", src="messages[2]"),
        user("Are you still there?", src="messages[3]"),
    )


def test_C01_orphan_tool_call_rejected_naming_id_and_location() -> None:
    request = c01_request()
    before = request.model_dump()
    err = violation(request)
    assert err.status == 400 and err.kind == "invalid_request"
    assert [(p.code, p.id, p.location) for p in err.problems] == [
        ("orphan_tool_call", "call_2", "messages[1].tool_calls[1]")
    ]
    assert "tool call call_2 (messages[1].tool_calls[1]) has no tool result" in err.message
    # same error on retry, input untouched
    assert violation(request).message == err.message
    assert request.model_dump() == before


def test_C01_repair_policy_adds_error_result_after_the_other_results() -> None:
    outcome = check_request(c01_request(), REPAIR)
    msgs = outcome.request.messages
    assert layout(msgs) == ["user", "assistant:call_1,call_2", "tool:call_1", "tool:call_2", "user"]
    added = msgs[3]
    assert isinstance(added, ToolResultMessage)
    assert added.is_error and added.content == [TextPart(text=MISSING_RESULT_TEXT)] and added.name == "bash"
    assert [(r.code, r.id, r.location) for r in outcome.repairs] == [
        ("orphan_tool_call", "call_2", "messages[1].tool_calls[1]")
    ]


def test_C02_orphan_tool_result_rejected_naming_id_and_message_index() -> None:
    request = req(
        SystemMessage(content=[TextPart(text="You are a coding assistant.")], src="system"),
        result("toolu_old7", "def main():\n    pass\n", src="messages[1]"),
        user("Now summarise what you found.", src="messages[2]"),
    )
    for policy in (REJECT, REPAIR, STRICT):
        err = violation(request, policy)
        assert [(p.code, p.id, p.location) for p in err.problems] == [
            ("orphan_tool_result", "toolu_old7", "messages[1]")
        ]
        assert "toolu_old7 (messages[1]) has no matching earlier tool call" in err.message


def c04_request() -> Request:
    # Anthropic user turn [text, tool_result] split by the edge in block order.
    return req(
        user("List the current folder.", src="messages[0]"),
        assistant(
            call("toolu_l1", "list_dir", {"path": "."}, src="messages[1].content[0]"), src="messages[1]"
        ),
        user("Here is the listing:", src="messages[2].content[0]"),
        result("toolu_l1", "a.txt\nb.txt", src="messages[2].content[1]"),
    )


def test_C04_text_before_tool_result_is_moved_after_the_result() -> None:
    outcome = check_request(c04_request(), REJECT)
    msgs = outcome.request.messages
    assert layout(msgs) == ["user", "assistant:toolu_l1", "tool:toolu_l1", "user"]
    assert isinstance(msgs[3], UserMessage) and msgs[3].content[0].text == "Here is the listing:"  # type: ignore[union-attr]
    assert [(r.code, r.id, r.location) for r in outcome.repairs] == [
        ("result_not_adjacent", "toolu_l1", "messages[2].content[1]")
    ]


def test_C04_strict_rejects_pointing_at_the_user_turn() -> None:
    err = violation(c04_request(), STRICT)
    assert [(p.code, p.id) for p in err.problems] == [("result_not_adjacent", "toolu_l1")]
    assert err.problems[0].location is not None and err.problems[0].location.startswith("messages[2]")
    assert "orphan" not in err.message  # the call counts as answered


def c05_request(second: ToolCallPart) -> Request:
    return req(
        user("What files are here?", src="messages[0]"),
        assistant(
            call("toolu_d1", "list_files", {"dir": "."}, src="messages[1].content[0]"),
            second,
            src="messages[1]",
        ),
        result("toolu_d1", "a.txt", src="messages[2]"),
    )


def test_C05_identical_duplicate_calls_collapse_into_one() -> None:
    # the tool_calls copy has the raw string as sent; the content block copy was serialised
    second = call("toolu_d1", "list_files", {"dir": "."}, raw='{"dir": "."}', src="messages[1].tool_calls[0]")
    request = c05_request(second)
    outcome = check_request(request, REJECT)
    msgs = outcome.request.messages
    assert layout(msgs) == ["user", "assistant:toolu_d1", "tool:toolu_d1"]
    assert [(r.code, r.id, r.location) for r in outcome.repairs] == [
        ("duplicate_tool_call", "toolu_d1", "messages[1].tool_calls[0]")
    ]
    # input not mutated
    assert len(request.messages[1].tool_calls) == 2  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "second",
    [
        call("toolu_d1", "list_files", {"dir": "/"}, src="messages[1].tool_calls[0]"),
        call("toolu_d1", "read_file", {"dir": "."}, src="messages[1].tool_calls[0]"),
    ],
    ids=["different-arguments", "different-name"],
)
def test_C05_differing_duplicate_call_ids_rejected(second: ToolCallPart) -> None:
    err = violation(c05_request(second))
    assert [(p.code, p.id, p.location) for p in err.problems] == [
        ("duplicate_tool_call", "toolu_d1", "messages[1].tool_calls[0]")
    ]
    assert "toolu_d1" in err.message


def test_duplicate_call_id_in_two_assistant_messages_rejected_even_if_identical() -> None:
    request = req(
        user("go"),
        assistant(call("c1")),
        result("c1"),
        assistant(call("c1")),
        result("c1"),
    )
    err = violation(request, REPAIR)
    codes = {(p.code, p.id) for p in err.problems}
    assert ("duplicate_tool_call", "c1") in codes
    assert {p.id for p in err.problems} == {"c1"}


def c19_request() -> Request:
    return req(
        user("Read a.txt, b.txt and c.txt.", src="messages[0]"),
        assistant(
            call("toolu_r1", "read_file", {"path": "a.txt"}, src="messages[1].content[0]"),
            call("toolu_r2", "read_file", {"path": "b.txt"}, src="messages[1].content[1]"),
            call("toolu_r3", "read_file", {"path": "c.txt"}, src="messages[1].content[2]"),
            src="messages[1]",
        ),
        result("toolu_r2", "B", src="messages[2].content[0]"),
        result("toolu_r3", "C", src="messages[2].content[1]"),
        result("toolu_r1", "A", src="messages[2].content[2]"),
    )


def test_C19_results_in_completion_order_are_put_in_call_order_by_id() -> None:
    outcome = check_request(c19_request(), REJECT)
    msgs = outcome.request.messages
    assert layout(msgs) == [
        "user",
        "assistant:toolu_r1,toolu_r2,toolu_r3",
        "tool:toolu_r1",
        "tool:toolu_r2",
        "tool:toolu_r3",
    ]
    texts = [m.content[0].text for m in msgs[2:]]  # type: ignore[union-attr]
    assert texts == ["A", "B", "C"]  # each result keeps its own output
    assert [(r.code, r.id) for r in outcome.repairs] == [("result_out_of_order", "toolu_r1")]


def test_C19_strict_rejects_out_of_order_results() -> None:
    err = violation(c19_request(), STRICT)
    assert [(p.code, p.id, p.location) for p in err.problems] == [
        ("result_out_of_order", "toolu_r1", "messages[2].content[2]")
    ]


def test_C22_mismatched_ids_name_both_problems_in_one_error() -> None:
    request = req(
        user("What time is it?", src="messages[0]"),
        assistant(call("call_a7", "get_time", raw="{}", src="messages[1].tool_calls[0]"), src="messages[1]"),
        result("call_b9", '"12:00"', src="messages[2]"),
    )
    err = violation(request)
    assert sorted((p.code, p.id) for p in err.problems) == [
        ("orphan_tool_call", "call_a7"),
        ("orphan_tool_result", "call_b9"),
    ]
    assert "call_a7" in err.message and "call_b9" in err.message
    # under repair the missing result could be added, but the orphan result still rejects
    err2 = violation(request, REPAIR)
    assert [(p.code, p.id) for p in err2.problems] == [("orphan_tool_result", "call_b9")]


# ----------------------------------------------------------------------------- other rules


def test_valid_conversation_is_returned_as_the_same_request_without_repairs() -> None:
    request = req(
        user("hi"),
        assistant(call("a"), call("b")),
        result("a"),
        result("b"),
        assistant(TextPart(text="done")),
        user("thanks"),
    )
    outcome = check_request(request, STRICT)
    assert isinstance(outcome, GuardOutcome)
    assert outcome.request is request  # nothing changed: no copy (models are never mutated)
    assert outcome.repairs == [] and not outcome.repaired


def test_second_result_for_one_call_is_always_rejected() -> None:
    request = req(
        user("x"), assistant(call("a")), result("a", src="messages[2]"), result("a", src="messages[3]")
    )
    for policy in (REJECT, REPAIR):
        err = violation(request, policy)
        assert [(p.code, p.id, p.location) for p in err.problems] == [
            ("duplicate_tool_result", "a", "messages[3]")
        ]
        assert "messages[2]" in err.message


def test_result_before_its_call_is_rejected() -> None:
    request = req(
        user("x"), result("a", src="messages[1]"), assistant(call("a", src="messages[2].tool_calls[0]"))
    )
    err = violation(request, REPAIR)
    assert [(p.code, p.id) for p in err.problems] == [("result_before_call", "a")]
    assert "no matching earlier tool call" in err.message


def test_every_problem_is_listed_not_only_the_first() -> None:
    request = req(
        user("x"),
        result("ghost"),
        assistant(call("a"), call("b")),
        result("a"),
        result("a"),
    )
    err = violation(request)
    assert [(p.code, p.id) for p in err.problems] == [
        ("orphan_tool_result", "ghost"),
        ("orphan_tool_call", "b"),
        ("duplicate_tool_result", "a"),
    ]


def test_location_falls_back_to_internal_indices_without_src() -> None:
    err = violation(req(user("x"), assistant(TextPart(text="t"), call("a"))))
    assert err.problems[0].location == "messages[1].content[1]"
    err = violation(req(user("x"), result("z")))
    assert err.problems[0].location == "messages[1]"


def test_final_assistant_message_with_unanswered_calls_counts_as_orphan() -> None:
    request = req(user("x"), assistant(call("a")))
    assert [p.code for p in violation(request).problems] == ["orphan_tool_call"]
    repaired = check_request(request, REPAIR).request
    assert layout(repaired.messages) == ["user", "assistant:a", "tool:a"]


def test_final_assistant_prefill_without_calls_is_fine() -> None:
    request = req(user("x"), assistant(TextPart(text="Sure, ")))
    assert check_request(request, STRICT).request == request


def test_late_result_after_later_user_turn_is_moved_back_under_reorder() -> None:
    request = req(
        user("x"), assistant(call("a")), user("hello?"), result("a"), assistant(TextPart(text="ok"))
    )
    outcome = check_request(request, REJECT)
    assert layout(outcome.request.messages) == ["user", "assistant:a", "tool:a", "user", "assistant:"]
    assert [r.code for r in outcome.repairs] == ["result_not_adjacent"]
    assert [p.code for p in violation(request, STRICT).problems] == ["result_not_adjacent"]


def test_result_after_a_later_assistant_turn_is_moved_back() -> None:
    request = req(user("x"), assistant(call("a")), user("y"), assistant(call("b")), result("b"), result("a"))
    outcome = check_request(request, REJECT)
    assert layout(outcome.request.messages) == [
        "user",
        "assistant:a",
        "tool:a",
        "user",
        "assistant:b",
        "tool:b",
    ]


def test_repair_with_strict_ordering_places_error_result_in_call_order() -> None:
    request = req(user("x"), assistant(call("a"), call("b"), call("c")), result("a"), result("c"))
    outcome = check_request(request, GuardPolicy(pairing="repair", ordering="strict"))
    assert layout(outcome.request.messages) == ["user", "assistant:a,b,c", "tool:a", "tool:b", "tool:c"]


def test_collapsed_duplicate_keeps_a_signature_carried_by_the_second_copy() -> None:
    first = call("a")
    second = call("a").model_copy(update={"signature": "sig"})
    outcome = check_request(req(user("x"), assistant(first, second), result("a")), REJECT)
    kept = outcome.request.messages[1].tool_calls  # type: ignore[union-attr]
    assert [(c.id, c.signature) for c in kept] == [("a", "sig")]


def test_duplicates_with_unparseable_different_raw_arguments_are_not_collapsed() -> None:
    request = req(user("x"), assistant(call("a", raw="{oops"), call("a", raw="{nope")), result("a"))
    assert [p.code for p in violation(request).problems] == ["duplicate_tool_call"]


def test_long_conversation_is_linear_and_cheap() -> None:
    messages: list[Message] = []
    for t in range(200):
        messages.append(user(f"turn {t}"))
        ids = [f"c{t}_{k}" for k in range(3)]
        messages.append(assistant(*(call(i) for i in ids)))
        messages.extend(result(i) for i in reversed(ids))
    outcome = check_request(req(*messages), REJECT)
    assert len(outcome.repairs) == 200 * 2  # two of three results out of order per turn
    again = check_request(outcome.request, STRICT)
    assert again.repairs == []
