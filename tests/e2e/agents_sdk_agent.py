"""The OpenAI Agents SDK agent the end-to-end test runs in a child process: configured only by
the environment a user sets to point the SDK at a gateway (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``OPENAI_AGENTS_DISABLE_TRACING=1``), default model, default (Responses)
transport, one ``@function_tool`` reading ``note.txt`` in the working directory. Prints the
run's final output.
"""

from __future__ import annotations

from pathlib import Path

from agents import Agent, Runner, function_tool


@function_tool
def read_note() -> str:
    """Read the note in the working directory and return its text."""
    return Path("note.txt").read_text()


def main() -> None:
    agent = Agent(
        name="note-reader",
        instructions="Use the read_note tool, then answer with what the note says.",
        tools=[read_note],
    )
    result = Runner.run_sync(agent, "Read the note and tell me what it says.", max_turns=4)
    print(result.final_output)


if __name__ == "__main__":
    main()
