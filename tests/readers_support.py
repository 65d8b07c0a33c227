"""Shared by the reader tests: fixture paths, foreign files for sniff negatives, and a
run of a session through a default Monitor."""

from __future__ import annotations

import glob
import os
from pathlib import Path

from loopwatch import Monitor
from loopwatch._core.events import ToolCall
from loopwatch._readers import open_transcript, read, reader, sniff_head

FIXTURES = Path(__file__).parent / "fixtures"
#: the shared corpus: $LOOPWATCH_CORPUS, else ../shared/corpus beside the repository
CORPUS = Path(os.environ.get("LOOPWATCH_CORPUS") or Path(__file__).resolve().parents[1].parent / "shared" / "corpus")

#: a few lines of the core's generic events JSONL, which no transcript reader may claim
EVENTS_JSONL = (
    b'{"type": "user", "at": 0}\n'
    b'{"type": "tool", "name": "Bash", "input": {"command": "ls"}, "result": "a b", "at": 1}\n'
    b'{"type": "text", "text": "Listing the files.", "at": 2}\n'
    b'{"type": "turn", "at": 3, "tokens": 120}\n'
)


def fixture(fmt: str, name: str) -> str:
    return str(FIXTURES / fmt / name)


def head(path: str) -> bytes:
    """The head formats are told by, as `read` sniffs it (`sniff_head`)."""
    stream = open_transcript(path)
    with stream:
        return sniff_head(stream)[0]


def one_session(path: str, fmt: str | None = None):
    sessions = list(read(path, fmt))
    assert len(sessions) == 1
    return sessions[0]


def events_of(path: str, fmt: str | None = None):
    session = one_session(path, fmt)
    return session, list(session)


def calls(events) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


def foreign_fixtures(fmt: str) -> list[str]:
    """Every fixture of the other formats."""
    found = glob.glob(str(FIXTURES / "*" / "**" / "*"), recursive=True)  # a format's folder may have folders
    return sorted(p for p in found if Path(p).is_file() and Path(p).relative_to(FIXTURES).parts[0] != fmt)


def corpus_samples() -> list[str]:
    """One or two files of each corpus format (SWE-agent, mini-swe-agent, ATIF, console
    logs), when the shared corpus is on this machine; else none."""
    root = CORPUS
    if not root.is_dir():
        return []
    picks = []
    for pattern in (
        "swe-agent-traj/*/*/*.traj",
        "swe-agent-traj/*/*.traj",
        "mini-swe-agent-traj-json/*/*.traj.json",
        "atif/*/*/trajectory.json",
        "tb1-console-log/*/*/agent.log",
        "tb1-console-log/*/*/steps.json",
    ):
        picks.extend(sorted(glob.glob(str(root / pattern)))[:2])
    return [p for p in picks if os.path.isfile(p)]


def claims(fmt: str, path: str, data: bytes | None = None) -> bool:
    return reader(fmt).sniff(path, data if data is not None else head(path))


def stop_of(session, **config):
    """The first STOP a default monitor gives the session's events, or None."""
    monitor = Monitor(**config)
    for event in session:
        monitor.observe(event)
    return monitor.stop


def shape(events) -> list[tuple]:
    """(event type, tool name, source_ref) of each event: what the order tests compare."""
    return [(type(e).__name__, getattr(e, "name", None), e.source_ref) for e in events]
