"""Format detection by structure: a file is taken for a format by the shape of its
document (top-level keys, the type of its first line), never because a session's text
mentions another format's name or keys."""

from __future__ import annotations

import csv
import glob

import orjson
import pytest
from readers_support import CORPUS, calls, claims, corpus_samples, events_of, fixture, head

from loopwatch._readers import FORMATS, HEAD_SIZE, detect, read

#: words of other formats, as values a session's texts and names may hold
MARKERS = [
    "mini-swe-agent",
    "mini-swe-agent-1",
    "mini-swe-agent (step 3, $0.02):",
    "trajectory",
    "action",
    "observation",
    "schema_version",
    "ATIF-v1.2",
    "history",
    "agent",
    "run",
    "<returncode>0</returncode>",
]


def _lines(*objs: dict) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


#: a session in loopwatch's events format whose texts and names quote other formats
EVENTS = _lines(
    {"session": "mini-swe-agent/gpt-5/0001", "type": "text", "text": "Running the trajectory checker.", "at": 1},
    *(
        {"type": "tool", "name": marker, "input": {"cmd": marker}, "result": f'"{marker}": "{marker}"', "at": i + 2}
        for i, marker in enumerate(MARKERS)
    ),
    {"type": "correction", "message": "Please always provide EXACTLY ONE action in triple backticks.", "at": 40},
)


def test_an_events_session_quoting_other_formats_is_events(tmp_path):
    path = tmp_path / "mini-swe-agent__gpt-5__0001.jsonl"
    path.write_bytes(EVENTS)
    assert detect(str(path), EVENTS) == "events"
    session, events = events_of(str(path))  # no format named
    assert (session.format, session.session) == ("events", "mini-swe-agent/gpt-5/0001")
    assert [c.name for c in calls(events)] == MARKERS


@pytest.mark.parametrize(
    "fmt", ["mini-swe-agent", "swe-agent", "atif", "tb-console", "openhands", "chat", "codex", "copilot"]
)
@pytest.mark.parametrize("name", ["session.jsonl", "run.traj.json", "run.traj", "agent.log"])
def test_no_other_reader_claims_an_events_session_for_its_words(fmt, name):
    assert not claims(fmt, name, EVENTS)


def _chat(*contents: str) -> bytes:
    roles = ["user", "assistant"]
    return orjson.dumps({"messages": [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]})


@pytest.mark.parametrize(
    "contents",
    [
        ("trajectory", "action", "observation"),  # once a SWE-agent trajectory
        ("schema_version", "ATIF-v1.2"),  # once ATIF
        ("mini-swe-agent (step 1, $0.01):\nls",),  # once a console log
        ("mini-swe-agent", "mini-swe-agent-1"),  # once mini-swe-agent
    ],
)
def test_a_chat_whose_messages_hold_other_formats_words_is_a_chat(tmp_path, contents):
    data = _chat(*contents)
    path = tmp_path / "chat.json"
    path.write_bytes(data)
    assert detect(str(path), data) == "chat"


def _mini(submission: str = "diff --git a/x b/x\n") -> dict:
    return {
        "info": {"exit_status": "Submitted", "submission": submission, "mini_version": "1.14.4", "config": {}},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "Let me look.\n\n```bash\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
        ],
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "x__y-1",
    }


@pytest.mark.parametrize("indent", [False, True])
def test_a_mini_swe_agent_trajectory_by_its_keys(tmp_path, indent):
    data = orjson.dumps(_mini(), option=orjson.OPT_INDENT_2 if indent else 0)
    path = tmp_path / "x__y-1.json"  # not the usual name: the keys say it
    path.write_bytes(data)
    assert detect(str(path), data) == "mini-swe-agent"
    assert len(calls(events_of(str(path))[1])) == 1


def test_a_mini_swe_agent_trajectory_whose_head_is_all_patch_text(tmp_path):
    data = orjson.dumps(_mini("+" + "x" * (HEAD_SIZE + 1000)), option=orjson.OPT_INDENT_2)
    path = tmp_path / "x__y-1.traj.json"
    path.write_bytes(data)
    assert detect(str(path), data[:HEAD_SIZE]) == "mini-swe-agent"


def test_a_swe_agent_trajectory_by_its_keys():
    data = orjson.dumps(
        {
            "environment": "swe_main",
            "trajectory": [{"action": "ls", "observation": "a.py", "response": "r", "thought": "t", "state": "{}"}],
            "history": [],
            "info": {"exit_status": "submitted"},
        }
    )
    assert detect("run.json", data) == "swe-agent"


def test_an_atif_trajectory_by_its_keys():
    data = orjson.dumps({"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a"}, "steps": []})
    assert detect("trajectory.json", data) == "atif"


def test_a_codex_rollout_whose_first_line_is_longer_than_the_head(tmp_path):
    # 0.171 writes `ordinal` and the whole base instructions into the first line
    meta = {
        "timestamp": "2026-11-20T10:00:00.000Z",
        "ordinal": 0,
        "type": "session_meta",
        "payload": {"id": "r", "cli_version": "0.171.0", "base_instructions": {"text": "You are Codex. " * 6000}},
    }
    rest = open(fixture("codex", "rollout.jsonl"), "rb").read().split(b"\n", 1)[1]
    data = orjson.dumps(meta) + b"\n" + rest
    assert data.index(b"\n") > HEAD_SIZE
    path = tmp_path / "rollout-2026-11-20.jsonl"
    path.write_bytes(data)
    assert detect(str(path), head(str(path))) == "codex"
    assert calls(events_of(str(path))[1])


#: the corpus formats, by the folder their files are in
_CORPUS_FORMATS = {
    "swe-agent-traj": "swe-agent",
    "mini-swe-agent-traj-json": "mini-swe-agent",
    "atif": "atif",
}


@pytest.mark.parametrize("path", [p for p in corpus_samples() if not p.endswith("steps.json")])
def test_corpus_files_are_their_formats(path):
    folder = path[len(str(CORPUS)) + 1 :].split("/")[0]
    expected = _CORPUS_FORMATS.get(folder, "tb-console")
    assert detect(path, head(path)) == expected


def _tb2_mini_sessions(n: int) -> list[str]:
    """mini-swe-agent sessions of the shared TB2 corpus (events whose session names
    start with `mini-swe-agent/`), when it is on this machine."""
    root = CORPUS.parent / "corpus-tb2"
    manifest = root / "MANIFEST.tsv"
    if not manifest.is_file():
        return []
    with open(manifest, newline="", encoding="utf-8") as fh:
        rows = [r["local_path"] for r in csv.DictReader(fh, delimiter="\t") if r["agent"] == "mini-swe-agent"]
    return [str(root / p) for p in sorted(rows)[:n] if (root / p).is_file()]


@pytest.mark.parametrize("path", _tb2_mini_sessions(12))
def test_tb2_sessions_of_mini_swe_agent_read_as_events(path):
    assert detect(path, head(path)) == "events"
    session = next(read(path))
    assert session.format == "events" and session.session.startswith("mini-swe-agent/")


def test_tb2_corpus_is_reachable_when_the_corpus_is():
    # the test above must not pass by finding nothing where the corpus exists
    if glob.glob(str(CORPUS.parent / "corpus-tb2" / "*" / "*.jsonl")):
        assert len(_tb2_mini_sessions(12)) == 12


def test_loopwatch_events_are_sniffed_first():
    # a session's texts may quote any format; its own first line says what it is
    assert next(iter(FORMATS)) == "events"
