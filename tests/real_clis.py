"""The real agent CLIs the tests drive, and the one way they are installed.

`CLIS` names each CLI loopwatch guards live, its npm package, the command it installs
and the releases the tests drive: the pinned one first, then the current release (the
newest on the npm registry when it was last looked at). `.ci/run` installs them all with
`python tests/real_clis.py install` before the suite runs; a test asks for one with
`binary(name, version)`, which installs it on first use when CI did not.

Installed with npm into `~/.cache/loopwatch-tests/<name>-<version>` (or
`$LOOPWATCH_TEST_CACHE`), each release in a folder of its own, and reused. Nothing is
downloaded at run time: a CLI that would update itself is told not to by its test.

    python tests/real_clis.py install [NAME ...]   # every release of every CLI (or of NAME)
    python tests/real_clis.py list                 # name, package, releases, installed or not
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import NamedTuple


class Cli(NamedTuple):
    package: str
    command: str  # the name under node_modules/.bin
    versions: tuple[str, ...]  # pinned, then current


CLIS: dict[str, Cli] = {
    "claude-code": Cli("@anthropic-ai/claude-code", "claude", ("2.1.197", "2.1.332")),
    "codex": Cli("@openai/codex", "codex", ("0.171.0",)),
    "copilot": Cli("@github/copilot", "copilot", ("1.0.89", "1.0.102")),
    "gemini-cli": Cli("@google/gemini-cli", "gemini", ("0.58.0", "0.61.0")),
    "cline": Cli("cline", "cline", ("3.0.57", "3.0.65")),
    # 1.17.20 has no linux-x64 binary on the registry (its platform packages were never
    # published): 1.17.19 is the pinned release.
    "opencode": Cli("opencode-ai", "opencode", ("1.17.19", "1.18.33")),
}

_LOCK = threading.Lock()


def cache_dir(name: str, version: str) -> Path:
    base = os.environ.get("LOOPWATCH_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "loopwatch-tests")
    return Path(base) / f"{name}-{version}"


def installed(name: str, version: str) -> Path | None:
    """The CLI's command at `version`, when it is installed."""
    path = cache_dir(name, version) / "node_modules" / ".bin" / CLIS[name].command
    return path if path.exists() else None


def install(name: str, version: str) -> Path:
    """Install `name` at `version` (once); its command's path. Raises RuntimeError with
    npm's words when npm is there but the install fails, LookupError without npm."""
    with _LOCK:
        found = installed(name, version)
        if found is not None:
            return found
        if shutil.which("node") is None or shutil.which("npm") is None:
            raise LookupError(f"the real {name} tests need node and npm (not found on PATH)")
        prefix = cache_dir(name, version)
        prefix.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"{CLIS[name].package}@{version}",
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=900,
        )
        found = installed(name, version)
        if done.returncode != 0 or found is None:
            raise RuntimeError(
                f"npm could not install {CLIS[name].package}@{version} into {prefix}:\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        return found


def binary(name: str, version: str | None = None) -> str:
    """For a test: the CLI's command (the pinned release by default), installed on first
    use. Skips only where node or npm is missing; an install that fails fails the test."""
    import pytest

    version = version or CLIS[name].versions[0]
    try:
        return str(install(name, version))
    except LookupError as exc:
        pytest.skip(str(exc))
    except RuntimeError as exc:
        pytest.fail(str(exc))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("install", "list"):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    names = argv[1:] or list(CLIS)
    for name in names:
        if name not in CLIS:
            print(f"unknown CLI {name!r}: one of {', '.join(CLIS)}", file=sys.stderr)
            return 2
    for name in names:
        for version in CLIS[name].versions:
            if argv[0] == "list":
                where = installed(name, version)
                print(f"{name}\t{CLIS[name].package}@{version}\t{where or 'not installed'}")
            else:
                print(f"{name} {version}: {install(name, version)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
