"""Progress of a replay, shown from its first second.

A replay of the whole corpus runs for a minute or more, and before the first file ends it
imports the pipeline and the price catalog (seconds) and replays the largest file first. So:

* :class:`BarProgress` — stdout is a terminal: a rich progress bar (phase, files done of all,
  errors so far, elapsed time), on screen from the start, removed when the report prints;
* :class:`LineProgress` — stdout is not a terminal (a pipe, a file, CI): a line on stderr at
  the start, when the files are found, then every :attr:`LineProgress.every_s` seconds or every
  tenth of the files, whichever comes first, and at the end:
  ``replay: 120/306 files, 3 errors, 12 s``.

"errors" counts what makes the replay fail: Turnstile's crashes and losses so far.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import IO, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


class ReplayProgress(Protocol):
    """What the replay command reports while it runs."""

    def phase(self, text: str) -> None:
        """What is being done before the files are replayed (``"starting"``)."""

    def start(self, total: int) -> None:
        """``total`` files were found."""

    def file_done(self, source: str, done: int, total: int, errors: int) -> None:
        """File ``source`` ended: ``done`` of ``total``, ``errors`` crashes and losses so far."""

    def close(self) -> None:
        """The replay ended (the report follows)."""


class BarProgress:
    """A rich progress bar on ``console`` (a terminal), transient."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("replay"),
            SpinnerColumn(),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("files, {task.fields[errors]} errors"),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=True,
        )
        self._task = self._progress.add_task("starting", total=None, errors=0)
        self._progress.start()
        self._closed = False

    def phase(self, text: str) -> None:
        self._progress.update(self._task, description=text)
        self._progress.refresh()

    def start(self, total: int) -> None:
        self._progress.update(self._task, total=total, completed=0, description="")
        self._progress.refresh()

    def file_done(self, source: str, done: int, total: int, errors: int) -> None:
        self._progress.update(
            self._task, completed=done, total=total, errors=errors, description=source[-50:]
        )

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._progress.stop()


class LineProgress:
    """Progress lines on ``stream`` (stderr): see the module docstring. ``clock`` (seconds,
    monotonic) is injectable for tests; :meth:`tick` is what the background thread calls every
    second, so that a long file still gets a line every ``every_s`` seconds."""

    def __init__(
        self,
        stream: IO[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        every_s: float = 5.0,
        ticker: bool = True,
    ) -> None:
        self.stream = stream
        self.clock = clock
        self.every_s = every_s
        self.started = clock()
        self.last = self.started
        self.done = self.total = self.errors = 0
        self.counting = False  # True once the files are found
        self.phase_text = "starting"
        self._closed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if ticker:
            self._thread = threading.Thread(
                target=self._tick_until_closed, name="replay-progress", daemon=True
            )
            self._thread.start()

    def _line(self, suffix: str = "") -> None:
        """Write one line (the caller holds the lock)."""
        seconds = self.clock() - self.started
        if self.counting:
            text = f"replay: {self.done}/{self.total} files, {self.errors} errors, {seconds:.0f} s{suffix}"
        else:
            text = f"replay: {self.phase_text}, {seconds:.0f} s"
        self.stream.write(text + "\n")
        self.stream.flush()
        self.last = self.clock()

    def phase(self, text: str) -> None:
        with self._lock:
            self.phase_text = text
            self._line()

    def start(self, total: int) -> None:
        with self._lock:
            self.counting, self.total = True, total
            self._line()

    def file_done(self, source: str, done: int, total: int, errors: int) -> None:
        with self._lock:
            self.done, self.total, self.errors = done, total, errors
            step = max(1, total // 10)
            if done == total or done % step == 0 or self.clock() - self.last >= self.every_s:
                self._line()

    def tick(self) -> None:
        """A line when ``every_s`` seconds passed since the last one."""
        with self._lock:
            if self.clock() - self.last >= self.every_s:
                self._line()

    def _tick_until_closed(self) -> None:
        while not self._stop.wait(1.0):
            self.tick()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            if self.counting and self.done != self.total:
                self._line(" (stopped)")


def make_progress(stdout_is_terminal: bool, console: Console, stderr: IO[str]) -> ReplayProgress:
    """The bar on ``console`` when stdout is a terminal, else lines on ``stderr``."""
    if stdout_is_terminal:
        return BarProgress(console)
    return LineProgress(stderr)
