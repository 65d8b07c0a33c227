"""Terminal captures of agent CLIs, such as Terminal-Bench's `agent.log`.

A raw terminal capture: escape codes, CR redraws, install noise. Where it holds
mini-swe-agent's step headers (`mini-swe-agent (step N, $cost):`), each step becomes a
`ToolCall`: the ```` ```bash ```` block after the header is the action, and what follows
`User:` is the observation (`<returncode>N</returncode>`; non-zero is a failure).
`source_ref = "step N"`, the agent's own counter. The cost in the header is cumulative;
the step's cost is the difference. There are no timestamps (one second per step).

Any other console log falls back to raw `Output` lines, for the `repeated_lines`
signal (`source_ref = "line N"` of the read that held them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import ModelText, Output
from ._common import read_bytes, shell_call
from .base import Session
from .mini_swe_agent import bash_block

__all__ = ["NAME", "read", "sniff"]

NAME = "tb-console"

_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_=>])")
_HEADER = re.compile(r"^mini-swe-agent \(step (\d+), \$([0-9.]+)\):\s*$", re.MULTILINE)
_HEAD_HEADER = re.compile(rb"^mini-swe-agent \(step \d+, \$[0-9.]+\):[ \t\r]*$", re.MULTILINE)
_WAITING = re.compile(r"^[^\w\s]?\s*Waiting for the LM to respond\.*\s*$")
_OUTPUT_CHUNK = 200  # lines per Output event in the fallback


def sniff(path: str, head: bytes) -> bool:
    # Plain text: a JSON transcript that quotes a console log is not one.
    if head.lstrip()[:1] in (b"{", b"["):
        return False
    if _HEAD_HEADER.search(head):  # a step header on a line of its own
        return True
    # A log named so is a terminal capture even without a header (its lines are read as output);
    # any other plain text (notes, a `.txt`) is no transcript.
    return path.endswith(".log") and b"\x00" not in head


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    text = read_bytes(path, stream).decode("utf-8", "replace")
    session = Session(format=NAME, session=_session_name(path), events=())
    step_of: dict[str, int] = {}
    session.meta["step_of"] = step_of
    if _HEADER.search(_ESCAPE.sub("", text[: 1 << 20]) if "\x1b" in text else text):
        session.events = _steps(_screen(text), step_of, session)
    else:
        session.events = _raw_lines(text)
    yield session


def _screen(text: str) -> str:
    """What a terminal would show, line by line: escapes gone, only the last CR redraw."""
    text = _ESCAPE.sub("", text)
    lines = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if "\r" in line:
            line = line.rsplit("\r", 1)[-1]
        if not _WAITING.match(line):
            lines.append(line)
    return "\n".join(lines)


def _steps(text: str, step_of: dict[str, int], session: Session) -> Iterator[Any]:
    headers = list(_HEADER.finditer(text))
    previous_cost = 0.0
    for k, header in enumerate(headers):
        number, cumulative = int(header.group(1)), float(header.group(2))
        body = text[header.end() : headers[k + 1].start() if k + 1 < len(headers) else len(text)]
        ref = f"step {number}"
        step_of[ref] = number
        cost = max(cumulative - previous_cost, 0.0)
        previous_cost = cumulative
        session.cost = cumulative
        assistant, _, observation = body.partition("\nUser:\n")
        yield ModelText(assistant.strip(), source_ref=ref)
        command = bash_block(assistant)
        if command is None or not observation:
            continue
        yield shell_call(command, observation.strip(), ref, cost=cost)


def _raw_lines(text: str) -> Iterator[Output]:
    lines = text.splitlines(keepends=True)
    for start in range(0, len(lines), _OUTPUT_CHUNK):
        yield Output("".join(lines[start : start + _OUTPUT_CHUNK]), source_ref=f"line {start + 1}")


def _session_name(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return parts[-2] if len(parts) > 1 and parts[-1] == "agent.log" else parts[-1]
