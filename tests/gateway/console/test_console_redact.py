"""No console page shows a secret (gateway/console/redact.py)."""

from __future__ import annotations

from markupsafe import escape

from gateway.console.redact import REDACTED, Redactor


def test_known_secrets_are_replaced_raw_and_html_escaped_longest_first() -> None:
    redact = Redactor(["sk-provider-123456", "sk-provider-123456-and-more", None, "short", "a<b>&c-secret"])
    text = f"x sk-provider-123456-and-more y sk-provider-123456 z {escape('a<b>&c-secret')} short"
    assert redact(text) == f"x {REDACTED} y {REDACTED} z {REDACTED} short"  # short values are left


def test_a_virtual_key_is_cut_to_its_visible_prefix() -> None:
    secret = "tsk-AbCdEfGh" + "x" * 35
    redact = Redactor([])
    assert redact(f"key={secret}!") == "key=tsk-AbCdEfGh…!"
    assert redact("prefix tsk-AbCdEfGh only") == "prefix tsk-AbCdEfGh only"  # what the key list shows
