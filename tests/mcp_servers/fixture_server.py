"""A stdio MCP server for the gateway's tests, built on the ``mcp`` SDK's ``MCPServer``.

Run as ``python tests/mcp_servers/fixture_server.py [--name NAME] [--search-param query|jql]
[--http-port PORT] [--family PIDFILE]`` (stdio by default). With ``--family`` the server first
starts descendants that try to outlive it (see :func:`spawn_family`).
Its tools cover the faults and edge cases the registry must handle:

* ``search`` (read-only): its one argument is ``query`` or ``jql`` (``--search-param``), so
  two instances expose the same tool name with different schemas (handed case C26);
* ``search_documents_by_semantic_similarity`` (read-only, handed case C24);
* ``exec`` (no annotations): ``cat build.log`` returns about 6 MB of text (handed case C28);
* ``echo`` (read-only, closed world);
* ``hang`` (read-only): never returns; ``die`` (read-only): the process exits mid-call;
* ``pid`` (read-only): the server's process id; ``headers`` (read-only): the HTTP headers the
  server received with the call; ``meta`` (read-only): the call's ``params._meta``;
* ``weird.name/with.dots`` and a name over 64 characters (read-only);
* ``untagged``: no annotations at all (must count as the worst case);
* ``delete_file`` (destructive), ``write_note`` (writes, not destructive, closed world, takes a
  ``path``);
* ``save_file`` (like ``write_note``, but really writes ``text`` to ``path``, resolved from the
  server's own working directory);
* ``reset(mode, target)`` (destructive): its schema declares ``mode`` one of ``soft``/``hard``
  and no other keys, yet it accepts anything, and records every call it receives; ``received``
  (read-only) returns those calls as JSON (to show a call never reached the server);
* with ``--routed``, ``routed(region)`` (read-only): ``region`` is mirrored in the
  ``Mcp-Param-Region`` HTTP header (``x-mcp-header``), which the server checks against it.

Resources ``note://<name>/readme`` and ``note://<name>/extra-N`` (``--resources N``), the template
``note://<name>/items/{item}``, the prompt ``summarize(topic)``; ``grow`` (read-only) adds one
resource, one prompt and one tool at run time and tells the client the lists changed.

With ``--oauth-issuer URL`` (HTTP only) the server is an OAuth protected resource of that issuer:
RS256 JWTs checked against its ``/jwks`` (PyJWT), audience ``http://127.0.0.1:PORT/mcp``, scope
``mcp`` required; its 401s carry the SDK's protected-resource metadata.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Annotated, Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.resources import FunctionResource
from mcp.types import ToolAnnotations
from pydantic import Field

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
LONG_NAME = "a_tool_name_that_is_deliberately_much_longer_than_sixty_four_characters_in_total"
BUILD_LOG_LINES = 155_000  # "line N: compiling module mK.c ...\n" is ~39 bytes: about 6 MB in all


class JwtVerifier:
    """The ``mcp`` SDK ``TokenVerifier`` of ``--oauth-issuer``: RS256 JWTs of ``issuer`` for ``audience``."""

    def __init__(self, issuer: str, audience: str) -> None:
        import jwt

        self.issuer = issuer
        self.audience = audience
        self.keys = jwt.PyJWKClient(f"{issuer}/jwks", cache_keys=True)

    async def verify_token(self, token: str) -> Any:
        import jwt
        from mcp.server.auth.provider import AccessToken

        try:
            key = await anyio.to_thread.run_sync(self.keys.get_signing_key_from_jwt, token)
            claims = jwt.decode(token, key, algorithms=["RS256"], audience=self.audience, issuer=self.issuer)
        except jwt.PyJWTError:
            return None
        return AccessToken(
            token=token,
            client_id=claims.get("client_id", ""),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=claims.get("exp"),
            resource=self.audience,
            subject=claims.get("sub"),
            claims=claims,
        )


def build(
    name: str,
    search_param: str,
    extra_resources: int = 0,
    routed: bool = False,
    oauth: tuple[str, str] | None = None,
) -> MCPServer:
    """The fixture server named ``name``."""
    auth: dict[str, Any] = {}
    if oauth is not None:
        from mcp.server.auth.settings import AuthSettings

        issuer, resource = oauth
        auth = {
            "token_verifier": JwtVerifier(issuer, resource),
            "auth": AuthSettings(issuer_url=issuer, resource_server_url=resource, required_scopes=["mcp"]),
        }
    server = MCPServer(name, version="0.0.1", warn_on_duplicate_tools=False, **auth)

    if routed:

        @server.tool(name="routed", annotations=READ_ONLY)
        def routed_tool(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
            return f"routed to {region}"

    @server.resource(
        f"note://{name}/readme",
        name="readme",
        description=f"{name} readme",
        mime_type="text/plain",
    )
    def readme() -> str:
        return f"readme of {name}"

    for i in range(extra_resources):
        server.add_resource(
            FunctionResource(uri=f"note://{name}/extra-{i}", name=f"extra-{i}", fn=lambda i=i: f"extra {i}")
        )

    @server.resource(f"note://{name}/items/{{item}}", name="item", mime_type="text/plain")
    def item(item: str) -> str:
        return f"{name} item {item}"

    @server.prompt(description="summarise a topic")
    def summarize(topic: str) -> str:
        return f"Summarise {topic} for {name}."

    grown = {"n": 0}

    @server.tool(annotations=READ_ONLY)
    async def grow(ctx: Context) -> str:
        grown["n"] += 1
        n = grown["n"]
        new = FunctionResource(uri=f"note://{name}/grown-{n}", name=f"grown-{n}", fn=lambda: "new")
        server.add_resource(new)
        server.add_prompt(Prompt.from_function(lambda: "grown", name=f"grown_{n}", description="grown"))
        server.add_tool(lambda: "grown", name=f"grown_{n}", description="grown", annotations=READ_ONLY)
        await ctx.notify_resources_changed()  # 2026-07-28: subscriptions/listen streams
        await ctx.notify_prompts_changed()
        await ctx.notify_tools_changed()
        for send in (  # handshake era: plain notifications (dropped on a 2026-07-28 connection)
            ctx.session.send_resource_list_changed,
            ctx.session.send_prompt_list_changed,
            ctx.session.send_tool_list_changed,
        ):
            await send()
        return f"grew {n}"

    if search_param == "jql":

        @server.tool(name="search", description=f"search {name} issues with JQL", annotations=READ_ONLY)
        def search_jql(jql: str) -> str:
            return f"{name} searched jql={jql}"

    else:

        @server.tool(name="search", description=f"search {name}", annotations=READ_ONLY)
        def search_query(query: str) -> str:
            return f"{name} searched query={query}"

    @server.tool(description="semantic search", annotations=READ_ONLY)
    def search_documents_by_semantic_similarity(query: str) -> str:
        return f"{name} found documents for {query}"

    @server.tool(name="exec")
    def exec_(cmd: str) -> str:
        if cmd == "cat build.log":
            return "".join(f"line {i}: compiling module m{i % 97}.c ...\n" for i in range(BUILD_LOG_LINES))
        return f"ran {cmd}"

    @server.tool(annotations=READ_ONLY)
    def echo(text: str) -> str:
        return text

    @server.tool(annotations=READ_ONLY)
    async def hang() -> str:
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool(annotations=READ_ONLY)
    def die() -> str:
        sys.stdout.flush()
        os._exit(3)

    @server.tool(annotations=READ_ONLY)
    def headers(ctx: Context) -> str:
        """The HTTP headers of this call as the server received them (JSON; {} on stdio)."""
        got = ctx.headers or {}
        return json.dumps({k.lower(): v for k, v in got.items()})

    @server.tool(annotations=READ_ONLY)
    def meta(ctx: Context) -> str:
        """The ``params._meta`` of this call as the server received it (JSON)."""
        return json.dumps(ctx.request_context.meta or {}, default=str)

    @server.tool(annotations=READ_ONLY)
    def pid() -> str:
        return str(os.getpid())

    @server.tool(name="weird.name/with.dots", annotations=READ_ONLY)
    def weird() -> str:
        return "weird ok"

    @server.tool(name=LONG_NAME, annotations=READ_ONLY)
    def long_named() -> str:
        return "long ok"

    @server.tool()
    def untagged(x: str = "") -> str:
        return f"untagged {x}"

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    )
    def delete_file(path: str) -> str:
        return f"deleted {path}"

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    )
    def write_note(path: str, text: str) -> str:
        return f"wrote {len(text)} characters to {path}"

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    )
    def save_file(path: str, text: str) -> str:
        with open(path, "w") as f:
            f.write(text)
        return f"saved {os.path.realpath(path)}"

    received: list[dict[str, Any]] = []

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    )
    def reset(
        mode: Annotated[str, Field(json_schema_extra={"enum": ["soft", "hard"]})], target: str = "HEAD"
    ) -> str:
        received.append({"tool": "reset", "mode": mode, "target": target})
        return f"reset --{mode} {target}"

    @server.tool(annotations=READ_ONLY)
    def received_calls() -> str:
        return json.dumps(received)

    return server


FAMILY = """
import os, sys, time
path = sys.argv[1]
def note(role):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, f"{role} {os.getpid()}\\n".encode())
    os.close(fd)
middle = os.fork()
if middle == 0:  # double fork in a session of its own: a daemon no process group reaches
    os.setsid()
    if os.fork() == 0:
        note("daemon")
        while True:
            time.sleep(3600)
    os._exit(0)
os.waitpid(middle, 0)
note("grandchild")
while True:
    time.sleep(3600)
"""


def spawn_family(pidfile: str) -> None:
    """Start a child (``grandchild`` of the gateway, in the server's process group) that
    double-forks a ``daemon`` in a session of its own, both inheriting stdin/stdout and
    sleeping forever. Each appends ``<role> <pid>`` to ``pidfile``; the server adds
    ``server <pid>``."""
    import subprocess

    subprocess.Popen([sys.executable, "-c", FAMILY, pidfile])
    fd = os.open(pidfile, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, f"server {os.getpid()}\n".encode())
    os.close(fd)


def main() -> None:
    """Parse the arguments and serve on stdio."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="fixture")
    parser.add_argument("--search-param", choices=["query", "jql"], default="query")
    parser.add_argument("--resources", type=int, default=0, help="extra static resources")
    parser.add_argument(
        "--http-port", type=int, default=0, help="serve streamable HTTP on 127.0.0.1:PORT/mcp"
    )
    parser.add_argument("--family", default="", help="start descendants, append their pids here")
    parser.add_argument("--routed", action="store_true", help="add the routed tool (x-mcp-header)")
    parser.add_argument("--oauth-issuer", default="", help="require JWTs of this issuer (HTTP only)")
    args = parser.parse_args()
    if args.family:
        spawn_family(args.family)
    oauth = (args.oauth_issuer, f"http://127.0.0.1:{args.http_port}/mcp") if args.oauth_issuer else None
    server = build(args.name, args.search_param, args.resources, args.routed, oauth)
    if args.http_port:
        server.run("streamable-http", host="127.0.0.1", port=args.http_port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
