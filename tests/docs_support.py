"""The code blocks of the README and the documentation site, read one way for every test
that runs them (`tests/test_docs_examples.py`, `tests/test_rollouts.py`, ...).

A page is Markdown; its code is in fenced blocks only, each with its language: `python`
(run), `bash` (commands, each line run from a copy of `examples/`), `console` (`$ command`
lines, each followed by what it prints), `toml` and `json` (read as what they claim to be),
and `text` (what the block before it prints, after a line "which prints"). A comment just
above a block says how it is treated otherwise: `<!-- not run: why -->` for a block that
cannot run here (root, a model, another program), `<!-- slow: why -->` for one run in the
slow tier only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LANGUAGES = {"python", "bash", "console", "toml", "json", "text"}


def pages() -> list[Path]:
    """The README and every page of the site (the hooks that build it are no page)."""
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)]


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    lang: str
    text: str
    heading: str  # the nearest heading above it, without its #s
    note: str | None  # the `<!-- ... -->` just above it
    prints: str | None = None  # the `text` block after "which prints", for a python block

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def not_run(self) -> str | None:
        return self.note[len("not run:") :].strip() if self.note and self.note.startswith("not run:") else None

    @property
    def slow(self) -> bool:
        return bool(self.note and self.note.startswith("slow:"))


FENCE = re.compile(r"^```(\S*)\s*$")
NOTE = re.compile(r"^<!--\s*(.*?)\s*-->$")


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of `page`, in order; a `text` block after "which prints" is
    attached to the block before it (as `prints`) rather than listed."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    heading, previous, i = "", "", 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if not fence:
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
            if line.strip():
                previous = line.strip()
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        text = "\n".join(lines[i + 1 : end]) + "\n"
        note = NOTE.match(previous)
        block = Block(page, i + 1, fence.group(1), text, heading, note.group(1) if note else None)
        if block.lang == "text" and previous == "which prints" and found:
            found[-1].prints = text
        else:
            found.append(block)
        previous, i = "```", end + 1
    return found


def every_block() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def section(page: Path, heading: str) -> list[Block]:
    """The blocks under the heading that starts with `heading`."""
    return [block for block in blocks(page) if block.heading.startswith(heading)]


def commands(block: Block) -> list[str]:
    """A `bash` block's command lines (a line ending in `\\` goes on with the next)."""
    joined = block.text.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def console(block: Block) -> list[tuple[str, str]]:
    """A `console` block's (command, what it prints) pairs."""
    pairs: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        else:
            pairs[-1][1].append(line)
    return [(command, "".join(out + "\n" for out in printed)) for command, printed in pairs]


class Sandbox:
    """A fresh clone's view for commands from the docs: a folder holding a copy of
    `examples/` and nothing else, a home of its own (an `install` writes there, never in
    yours), and `loopwatch` on the PATH as this tree's (`python -m loopwatch`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        shutil.copytree(ROOT / "examples", folder / "examples")
        home, bin_dir = folder / "home", folder / "bin"
        home.mkdir()
        bin_dir.mkdir()
        shim = bin_dir / "loopwatch"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m loopwatch "$@"\n')
        shim.chmod(0o755)
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(
                ("LOOPWATCH_", "XDG_", "CODEX_", "COPILOT_", "CLAUDE_", "GEMINI_", "OPENCODE_", "CLINE_")
            )
        }
        env.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_STATE_HOME=str(home / ".local" / "state"),
            XDG_DATA_HOME=str(home / ".local" / "share"),
            PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            PYTHONPATH=str(ROOT / "src"),
            COLUMNS="100",  # the width the pages show output at
            BROWSER="true",  # `report --open` opens nothing
        )
        self.env = env

    def run(self, command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
