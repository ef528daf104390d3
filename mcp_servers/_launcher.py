"""The launcher of a stdio MCP server on Linux: no descendant of the server outlives the gateway.

Run by :mod:`mcp_servers.stdio_transport` as::

    python -I -S _launcher.py --parent GATEWAY_PID --grace SECONDS -- COMMAND [ARGS...]

(``-I -S``: isolated, no ``site``; this file imports only the standard library, and of
``signal`` only its C core ``_signal`` (``signal`` adds ``enum`` and its imports, a third of the
start-up), and is run by path, so it starts in milliseconds and costs a few MB).

It makes itself a *child subreaper* (``PR_SET_CHILD_SUBREAPER``: every orphaned descendant,
including one that called ``setsid()`` and double-forked, is reparented to it, not to init), asks
for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``; the kernel sends it when the *thread*
that forked the launcher exits: the gateway forks from its event loop thread, which lives as long
as the gateway's MCP registry), and checks ``getppid()`` afterwards in case the gateway died
before the request was made. Then it forks the real server with stdin, stdout and stderr
inherited (the MCP stream goes straight between the gateway and the server: no relay, no copy;
stderr is the gateway's bounded log pipe, :mod:`mcp_servers.stdio_stderr`, which every
descendant of the server inherits in turn and the launcher's own messages share), the signal
mask cleared, the signals Python ignores (SIGPIPE, SIGXFSZ) restored to their
defaults, and a parent-death SIGKILL of its own (should the launcher itself be killed).

It ends every descendant, found by walking ``/proc`` from its own pid (SIGTERM, a bounded wait of
``--grace`` seconds, then SIGKILL until none is left), when:

* the server exits (the gateway closed its stdin, or the server crashed);
* it receives SIGTERM, SIGINT or SIGHUP (the gateway's transport asked it to stop, or the
  gateway died: the parent-death signal).

It exits with the server's status (``128 + N`` when the server was killed by signal N).

A signal is sent through a pidfd opened after checking the process's start time against the one
seen when the tree was read, so a pid reused meanwhile by an unrelated process is never signalled.
"""

from __future__ import annotations

import _signal as signal  # signal's functions and constants without its enum wrappers
import ctypes
import os
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
WATCHED = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
POLL_S = 0.01
KILL_ROUNDS_S = 2.0  # after the grace period: how long SIGKILL rounds go on (unkillable: D state)


def _say(text: str) -> None:
    os.write(2, f"turnstile-launcher[{os.getpid()}]: {text}\n".encode(errors="replace"))


def _prctl(libc: ctypes.CDLL, option: int, value: int) -> None:
    if libc.prctl(option, value, 0, 0, 0) != 0:
        _say(f"prctl({option}, {value}) failed: {os.strerror(ctypes.get_errno())}")


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(parent pid, state, start time in clock ticks) of ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()  # comm may hold spaces and parentheses
    return int(fields[1]), fields[0].decode(), fields[19].decode()


def _children(pid: int) -> list[int] | None:
    """The children of ``pid`` from ``/proc/PID/task/*/children`` (None when the kernel has no
    such file: CONFIG_PROC_CHILDREN off)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out  # gone
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            return None
        except OSError:
            continue
    return out


def _all_children() -> dict[int, list[int]]:
    """Parent pid -> children, from every ``/proc/PID/stat`` (the slow, always-there way)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            children.setdefault(stat[0], []).append(int(entry))
    return children


def descendants(root: int) -> dict[int, str]:
    """Every live (not zombie) descendant of ``root``: pid -> start time. Read from each
    process's ``children`` files (the tree only), else from a scan of all of ``/proc``. A pass
    may miss a process forked while it reads: callers repeat until a pass finds none."""
    table: dict[int, list[int]] | None = None
    found: dict[int, str] = {}
    seen = {root}
    todo = [root]
    while todo:
        pid = todo.pop()
        kids = _children(pid) if table is None else table.get(pid, [])
        if kids is None:
            table = _all_children()
            kids = table.get(pid, [])
        for child in kids:
            if child in seen:
                continue
            seen.add(child)
            todo.append(child)
            stat = _stat(child)
            if stat is not None and stat[1] not in ("Z", "X"):
                found[child] = stat[2]
    return found


def _signal(pid: int, start: str, sig: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # gone already
    except OSError:  # no pidfd (Linux < 5.3): check the start time, then signal by pid
        now = _stat(pid)
        if now is not None and now[2] == start:
            try:  # noqa: SIM105 (contextlib would add imports to the launcher's start)
                os.kill(pid, sig)
            except OSError:
                pass
        return
    try:
        now = _stat(pid)
        if now is not None and now[2] == start:  # the process read from /proc, not a reuse of its pid
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass
    finally:
        os.close(fd)


def _reap(server: int) -> int | None:
    """Reap every exited child (orphans reparented here included); the server's wait status
    when it was among them."""
    status = None
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == server:
            status = st
    return status


def end_tree(server: int, grace_s: float) -> int | None:
    """SIGTERM every descendant, wait up to ``grace_s`` for them to go, then SIGKILL what is left
    (for at most ``KILL_ROUNDS_S``). Returns the server's wait status if it was reaped here."""
    status = None
    me = os.getpid()
    termed: set[int] = set()
    deadline = time.monotonic() + grace_s
    give_up = deadline + KILL_ROUNDS_S
    while True:
        got = _reap(server)
        status = got if got is not None else status
        alive = descendants(me)
        if not alive:
            return status
        now = time.monotonic()
        if now >= give_up:
            _say(f"{len(alive)} descendants survived SIGKILL: {sorted(alive)}")
            return status
        for pid, start in alive.items():
            if now >= deadline:
                _signal(pid, start, signal.SIGKILL)
            elif pid not in termed:
                termed.add(pid)
                _signal(pid, start, signal.SIGTERM)
        signal.sigtimedwait({signal.SIGCHLD}, POLL_S)


def _exec_server(argv: list[str], libc: ctypes.CDLL | None, launcher: int) -> None:
    """In the forked child: restore what Python changed, then become the server."""
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        if libc is not None:
            _prctl(libc, PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != launcher:
                os._exit(1)
        os.execv(argv[0], argv)
    except BaseException as err:
        _say(f"cannot start {argv[0]!r}: {err}")
    os._exit(127)


def main(args: list[str]) -> int:
    """Parse ``--parent PID --grace S -- COMMAND ARGS...``, run the server, end the tree."""
    try:
        sep = args.index("--")
        opts = dict(zip(args[:sep:2], args[1:sep:2], strict=True))
        parent, grace_s, argv = int(opts["--parent"]), float(opts["--grace"]), args[sep + 1 :]
        if not argv:
            raise ValueError("no command")
    except (ValueError, KeyError) as err:
        _say(f"usage: --parent PID --grace SECONDS -- COMMAND [ARGS...] ({err})")
        return 2
    libc: ctypes.CDLL | None = None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _prctl(libc, PR_SET_CHILD_SUBREAPER, 1)
        _prctl(libc, PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError) as err:
        _say(f"no prctl: descendants may outlive the gateway ({err})")
    if os.getppid() != parent:
        return 1  # the gateway died before the parent-death signal was armed
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    me = os.getpid()
    server = os.fork()
    if server == 0:
        _exec_server(argv, libc, me)
    # The launcher holds no end of the MCP stream: the server's exit alone closes it.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    status = None
    while status is None:
        info = signal.sigwaitinfo(WATCHED)
        if info.si_signo in STOP_SIGNALS:
            break
        status = _reap(server)
    final = end_tree(server, grace_s)
    last = _reap(server)  # zombies reparented here while the tree was ended: leave none behind
    status = status if status is not None else final if final is not None else last
    if status is None:
        return 1
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # no interpreter teardown: nothing is buffered (os.write only)
