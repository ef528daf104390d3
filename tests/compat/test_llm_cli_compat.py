"""Simon Willison's ``llm`` CLI (0.36) through the gateway, configured as a user configures it:
``LLM_USER_PATH`` in a temporary directory holding ``extra-openai-models.yaml`` with the gateway
as extra OpenAI models (``api_base`` the gateway's ``/v1``, ``supports_schema`` /
``supports_tools``), one per upstream API, on llm's Chat Completions class and on its Responses
class (``responses: true``).

Scenarios: a plain prompt, ``--schema`` structured output (the schema reaches the upstream's
slot) and a tool (``--functions``: llm runs the Python function and sends its result back,
paired to the call). The matrix cases run the CLI's own entry point (``llm.cli.cli``: argv,
plugins, the YAML) in this process through click's runner, because a fresh ``llm`` process
costs seconds of imports each; one case runs the installed ``llm`` script as a subprocess
(bounded timeout, non-local connections sent to a dead proxy) to show the two agree.

``llm-anthropic`` (0.26) has no base-URL option (its Anthropic client reads
``ANTHROPIC_BASE_URL``), and it cannot send a request with the pinned anthropic 2.17.0 at all:
it always passes ``temperature`` (or ``top_p``), which ``Messages.stream()`` no longer takes
(0.30 requires anthropic < 2). Its row is a strict xfail naming that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from llm.cli import cli
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR
from .framework_wire import answer_structured, assert_paired, schema_props, schema_slot
from .scripts import call_tools, only, say, tool_names, user_texts

APIS = list(MODEL_FOR)
LLM = str(Path(sys.executable).parent / "llm")
TIMEOUT_S = 60
NATIVE_SLOT = {
    "openai_chat": "response_format",
    "openai_responses": "text.format",
    "anthropic_messages": "tool:json_output",  # the stand-in's Claude model has no native slot
    "gemini": "responseJsonSchema",  # gemini-3: JSON Schema as it is (gateway/providers/gemini_models.py)
}
FUNCTIONS = """
def get_weather(city: str) -> str:
    "The weather in a city."
    return "sunny, 21C in " + city
"""
SCHEMA = "name, population int"
# llm's OpenAI model classes: label -> (model id prefix, extra YAML lines).
FLAVOURS = {"chat": ("gw", []), "responses": ("gwr", ["  responses: true"])}


@pytest.fixture(scope="module")
def llm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``LLM_USER_PATH`` parent for the module: llm migrates its ``logs.db`` on every prompt
    (even with ``--no-log``), seconds on a fresh directory, so the tests share one."""
    return tmp_path_factory.mktemp("llm-home")


def _user_path(tmp: Path, gateway_url: str) -> Path:
    """``tmp/llm`` holding the gateway as extra OpenAI models: ``gw-<name>`` (Chat Completions)
    and ``gwr-<name>`` (``responses: true``, the Responses API)."""
    user = tmp / "llm"
    user.mkdir(exist_ok=True)
    lines = []
    for prefix, extra in FLAVOURS.values():
        for name in MODEL_FOR.values():
            lines += [
                f"- model_id: {prefix}-{name}",
                f"  model_name: {name}",
                f"  api_base: {gateway_url}/v1",
                "  supports_schema: true",
                "  supports_tools: true",
                *extra,
            ]
    (user / "extra-openai-models.yaml").write_text("\n".join(lines) + "\n")
    return user


def _env(tmp: Path, gateway_url: str) -> dict[str, str]:
    return {
        "LLM_USER_PATH": str(_user_path(tmp, gateway_url)),
        "OPENAI_API_KEY": "sk-client-key",
        "ANTHROPIC_API_KEY": "sk-ant-client-key",
        "ANTHROPIC_BASE_URL": gateway_url,
    }


def _llm(tmp: Path, gateway_url: str, flavour: str, api: str, *args: str) -> str:
    """``llm prompt -m <prefix>-<name> --no-log ARGS`` through the CLI's entry point; its stdout."""
    model = f"{FLAVOURS[flavour][0]}-{MODEL_FOR[api]}"
    run = CliRunner().invoke(cli, ["prompt", "-m", model, "--no-log", *args], env=_env(tmp, gateway_url))
    assert run.exit_code == 0, f"llm exited {run.exit_code}: {run.output}\n{run.exception!r}"
    return run.output


def _cases(scenario: str, checks: str) -> pytest.MarkDecorator:
    """Parametrize over (llm model class, api), each case with the row of its model class."""
    return pytest.mark.parametrize(
        ("flavour", "api"),
        [
            pytest.param(
                flavour,
                api,
                id=f"{flavour}-{api}",
                marks=pytest.mark.compat(client="llm", scenario=f"{scenario} ({flavour})", checks=checks),
            )
            for flavour in FLAVOURS
            for api in APIS
        ],
    )


def _row(scenario: str, checks: str) -> pytest.MarkDecorator:
    return pytest.mark.compat(client="llm", scenario=scenario, checks=checks)


@_cases("llm prompt", "the prompt reaches the upstream as the user text, streamed; the answer is printed")
def test_prompt_reaches_the_upstream_with_the_user_text(
    flavour: str, api: str, llm_home: Path, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Bonjour.")
    assert _llm(llm_home, gateway_url, flavour, api, "Say hello in French.").strip() == "Bonjour."
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["Say hello in French."]
    assert rec.stream


@_row(
    "llm prompt (subprocess)",
    "the installed llm script, as a process: the prompt reaches the upstream; the answer is printed",
)
@pytest.mark.parametrize("api", ["openai_chat"])
def test_llm_process_reaches_the_upstream_with_the_user_text(
    api: str, llm_home: Path, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Bonjour.")
    dead = "http://127.0.0.1:9"  # any non-local connection fails at once
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(llm_home),
        "TMPDIR": str(llm_home),
        "LANG": "C.UTF-8",
        "LLM_LOAD_PLUGINS": "",
        **_env(llm_home, gateway_url),
        **{k: dead for k in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")},
        "NO_PROXY": "127.0.0.1,localhost",
    }
    proc = subprocess.run(
        [LLM, "prompt", "-m", f"gw-{MODEL_FOR[api]}", "--no-log", "Say hello in French."],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, f"llm exited {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert proc.stdout.strip() == "Bonjour."
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["Say hello in French."]


@_cases(
    "llm --schema",
    "the schema reaches the upstream's native slot (forced tool on a Claude model without one); "
    "the printed JSON validates",
)
def test_schema_reaches_the_upstream_slot(
    flavour: str, api: str, llm_home: Path, gateway_url: str, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api)
    out = _llm(llm_home, gateway_url, flavour, api, "--schema", SCHEMA, "The biggest city of France?")
    assert json.loads(out) == {"name": "x", "population": 1}
    (rec,) = only(upstream, api)
    slot, schema = schema_slot(rec)
    assert slot == NATIVE_SLOT[api]
    assert schema_props(schema) == {"name", "population"}


@_cases(
    "llm --functions",
    "the function is declared upstream as a tool; llm runs it and its result reaches the upstream "
    "paired to the call's id",
)
def test_tool_result_reaches_the_upstream_paired_to_its_call(
    flavour: str, api: str, llm_home: Path, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call("call_weather_1", "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    out = _llm(llm_home, gateway_url, flavour, api, "--functions", FUNCTIONS, "Weather in Paris?")
    assert "It is sunny in Paris." in out
    first, second = only(upstream, api)
    assert tool_names(first) == ["get_weather"]
    assert_paired(second, "get_weather", "sunny, 21C in Paris")


@_row(
    "llm prompt (llm-anthropic)",
    "llm-anthropic's Claude model on ANTHROPIC_BASE_URL = the gateway: the prompt reaches the upstream",
)
@pytest.mark.parametrize("api", ["anthropic_messages"])
@pytest.mark.xfail(
    strict=True,
    reason="client: llm-anthropic 0.26 always passes temperature (or top_p) to Messages.stream(), "
    "which anthropic 2.17.0 no longer takes (TypeError before any request); 0.30 needs anthropic<2",
)
def test_llm_anthropic_prompt_reaches_the_upstream(
    api: str, llm_home: Path, gateway_url: str, upstream: UpstreamStandin
) -> None:
    from standins.tool_answers import text_answer
    from standins.upstream import answering

    upstream.script(
        answering(
            lambda a, _b, stream: text_answer(a, "Bonjour.", stream=stream),
            api=api,
            model="claude-sonnet-4-5",
        )
    )
    run = CliRunner().invoke(
        cli,
        ["prompt", "-m", "anthropic/claude-sonnet-4-5", "--no-log", "Say hello in French."],
        env=_env(llm_home, gateway_url),
    )
    assert run.exit_code == 0, f"llm exited {run.exit_code}: {run.output}\n{run.exception!r}"
    assert run.output.strip() == "Bonjour."
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["Say hello in French."]
