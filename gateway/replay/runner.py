"""Running a replay over many files, in parallel worker processes.

Each file is read (:mod:`gateway.replay.discover`) and replayed by one worker; a worker runs
one asyncio loop and one pipeline per file, with a transcript in a temporary SQLite file
(deleted afterwards; ``keep_db`` keeps it) and one routing engine per file for the routing
estimate (:mod:`gateway.replay.routing`). Reports merge in the parent. Files go to the
workers largest first so that the long sessions do not finish last.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from gateway.config import GatewayConfig, GuardPolicy
from gateway.deployments import DeploymentTable
from gateway.pipeline import Gateway, Pipeline
from gateway.replay.conversations import ConversationReplayer
from gateway.replay.discover import DEFAULT_EXCLUDE, iter_files, load
from gateway.replay.recordings import RecordingReplayer
from gateway.replay.report import Report
from gateway.replay.routing import ReplayRouting, load_routing
from gateway.replay.upstream import ReplayProvider
from gateway.transcript import TranscriptWriter


def _size(path: Path) -> int:
    """Bytes in ``path``; -1 when it cannot be read (a broken link: its reader reports it)."""
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _source(path: Path, roots: list[Path]) -> str:
    for root in roots:
        try:
            rel = path.resolve().relative_to(root.resolve() if root.is_dir() else root.resolve().parent)
            return rel.as_posix()
        except ValueError:
            continue
    return path.as_posix()


async def _replay_file(path: Path, source: str, db_dir: str, routing: GatewayConfig | None) -> Report:
    rep = Report()
    rep.counts["files"] += 1
    loaded = load(path, source)
    rep.issues.extend({"file": i.file, "line": i.line, "message": i.message} for i in loaded.issues)
    if loaded.unsupported:
        rep.unsupported.append({"file": source, "where": "", "reason": loaded.unsupported})
    if loaded.exchanges:
        rr = RecordingReplayer(rep)
        for ex in loaded.exchanges:
            try:
                rr.replay(ex)
            except Exception as err:
                rep.crash(ex.source, ex.name, err)
    if loaded.conversations:
        providers = {api: ReplayProvider(api) for api in ("openai_chat", "anthropic_messages")}
        writer = TranscriptWriter(Path(db_dir) / (source.replace("/", "_")[-100:] + ".db"))
        await writer.start()
        gw = Gateway(
            config=GatewayConfig(guards=GuardPolicy(pairing="repair")),
            table=DeploymentTable(),
            providers=dict(providers),
            transcript=writer,
        )
        router = ReplayRouting(routing) if routing is not None else None
        cr = ConversationReplayer(Pipeline(gw), providers, rep, router)
        try:
            for conv in loaded.conversations:
                await cr.replay(conv)
        finally:
            await writer.close()
        rep.counts["transcript_rows"] += writer.written
    return rep


def quiet_logs() -> None:
    """Silence the gateway's structured logs (every replayed rejection would log a warning)."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))


def preload() -> None:
    """Import the price catalog and the tokenizer (litellm, seconds) once, before worker
    processes fork: token estimates then never depend on whether the import had finished
    (the totals of two replays of the same corpus are identical)."""
    from gateway.providers.catalog import load_tokenizer, model_info

    model_info("gpt-4o", "openai")
    load_tokenizer()


def replay_file(path: str, source: str, db_dir: str, routing: GatewayConfig | None = None) -> Report:
    """Replay one file in a fresh event loop, routing its turns with ``routing`` (None: no
    routing estimate); any exception becomes a crash in the report."""
    quiet_logs()
    try:
        return asyncio.run(_replay_file(Path(path), source, db_dir, routing))
    except Exception as err:
        rep = Report()
        rep.counts["files"] += 1
        rep.crash(source, "", err)
        return rep


def run(
    paths: list[Path],
    *,
    jobs: int | None = None,
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE,
    on_file: Callable[[str, int, int, int], None] | None = None,
    db_dir: str | None = None,
    routing_config: Path | None = None,
    route: bool = True,
    on_start: Callable[[int], None] | None = None,
) -> Report:
    """Replay every file under ``paths`` with ``jobs`` worker processes (default: CPU count;
    1 runs in this process). ``on_start(total)`` is called once the files are found (before
    the price catalog loads), ``on_file(source, done, total, errors)`` as each file ends
    (``errors``: crashes and losses so far).
    Unless ``route`` is False, every turn is also routed with the replay routing configuration
    at ``routing_config`` (default :data:`gateway.replay.routing.DEFAULT_ROUTING_PATH`; raises
    :class:`gateway.errors.ConfigError` when it does not validate). Returns the merged
    :class:`Report`."""
    routing = load_routing(routing_config) if route else None
    files = sorted(iter_files(paths, exclude), key=lambda p: -_size(p))
    sources = [_source(p, paths) for p in files]
    total = len(files)
    if on_start:
        on_start(total)
    report = Report()
    jobs = jobs or os.cpu_count() or 1
    quiet_logs()
    preload()
    with tempfile.TemporaryDirectory(prefix="turnstile-replay-") as tmp:
        where = db_dir or tmp
        if jobs == 1:
            for n, (p, s) in enumerate(zip(files, sources, strict=True), 1):
                report.merge(replay_file(str(p), s, where, routing))
                if on_file:
                    on_file(s, n, total, len(report.crashes) + len(report.losses))
            return report
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {
                pool.submit(replay_file, str(p), s, where, routing): s
                for p, s in zip(files, sources, strict=True)
            }
            for n, fut in enumerate(as_completed(futures), 1):
                report.merge(fut.result())
                if on_file:
                    on_file(futures[fut], n, total, len(report.crashes) + len(report.losses))
    return report
