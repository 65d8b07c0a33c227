"""A first record of any length: every format is told by the structure of its head, never
by how much text its first record happens to hold.

Each reader's own small transcript is written again with its first record made longer
than the 64 KiB head (a long string as that record's first key, so every key that names
the format comes after it), under a name that says nothing; it must be detected as its
format and read into the same calls. A Codex rollout whose first line (`session_meta`,
carrying the user's instructions) is 1 MiB is read whatever its keys' order and spacing,
from a file, from standard input and while `loopwatch run` follows it.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import jsonl, looping_events
from readers_support import FIXTURES, calls, fixture

from loopwatch._readers import FORMATS, HEAD_SIZE, detect, open_stdin, read, sniff_head
from loopwatch._readers.jsonio import _completed, structure_head

BIG = "x" * (100 * 1024)  # a first record well past the head

# -- each format's transcript, written here or taken from the fixtures ----------------


def _swe_agent() -> bytes:
    step = {"action": "pytest -x", "observation": "E   ImportError", "response": "try", "thought": "t"}
    return json.dumps(
        {"environment": "swe_main", "trajectory": [step] * 4, "info": {"exit_status": "submitted"}}
    ).encode()


def _mini_swe_agent() -> bytes:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help."}, {"role": "user", "content": "fix"}]
    for _ in range(4):
        messages.append({"role": "assistant", "content": "THOUGHT: again\n```bash\npytest -x\n```"})
        messages.append({"role": "user", "content": "<returncode>1</returncode>\n<output>E fail</output>"})
    return json.dumps(
        {"info": {"mini_version": "1.0"}, "messages": messages, "trajectory_format": "mini-swe-agent-1"}
    ).encode()


def _atif() -> bytes:
    steps = [
        {
            "step_id": i + 1,
            "source": "agent",
            "message": "again",
            "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "bash", "arguments": {"command": "pytest -x"}}],
            "observation": {"results": [{"source_call_id": f"c{i}", "content": "E fail"}]},
        }
        for i in range(4)
    ]
    return json.dumps(
        {"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a"}, "steps": steps}
    ).encode()


def _asciicast() -> bytes:
    lines = [json.dumps({"version": 2, "width": 80, "height": 24}), json.dumps([0.0, "i", "pytest -x\r"])]
    lines += [json.dumps([0.5 * i, "o", "E   ImportError: cannot import name 'x'\r\n"]) for i in range(1, 8)]
    return ("\n".join(lines) + "\n").encode()


def _tb_console() -> bytes:
    return "".join(
        f"mini-swe-agent (step {i}, $0.0{i}):\nTHOUGHT: again\n```bash\npytest -x\n```\n"
        "User:\n<returncode>1</returncode>\n<output>E fail</output>\n"
        for i in range(1, 6)
    ).encode()


#: format -> (its transcript, the file name to give it, where its first record is)
#: where: "line" (the first line of JSON Lines), "doc" (the document itself),
#: a key (the first element of that list), or "" (the top-level list's first element)
SAMPLES: dict[str, tuple[bytes, str, str]] = {
    "events": (jsonl(looping_events()).encode(), "session.jsonl", "line"),
    "asciicast": (_asciicast(), "recording.json", "line"),
    "swe-agent": (_swe_agent(), "session.json", "trajectory"),
    "mini-swe-agent": (_mini_swe_agent(), "session.json", "messages"),
    "atif": (_atif(), "session.json", "steps"),
    "tb-console": (_tb_console(), "agent.log", "text"),
    "claude-code": ((FIXTURES / "claude-code" / "looping.jsonl").read_bytes(), "session.jsonl", "line"),
    "codex": ((FIXTURES / "codex" / "looping.jsonl").read_bytes(), "session.jsonl", "line"),
    "copilot": ((FIXTURES / "copilot" / "89-loop.events.jsonl").read_bytes(), "session.jsonl", "line"),
    "cursor": ((FIXTURES / "cursor" / "loop.stream-json.jsonl").read_bytes(), "run.jsonl", "line"),
    "gemini-cli": ((FIXTURES / "gemini-cli" / "loop.session.jsonl").read_bytes(), "session.jsonl", "line"),
    "qwen-code": ((FIXTURES / "qwen-code" / "stopped-0.24.4.jsonl").read_bytes(), "session.jsonl", "line"),
    "opencode": ((FIXTURES / "opencode" / "1.18.33-healthy.run-format-json.jsonl").read_bytes(), "run.jsonl", "line"),
    "cline": ((FIXTURES / "cline" / "3.0.65" / "loop" / "run.jsonl").read_bytes(), "run.jsonl", "line"),
    "verl": ((FIXTURES / "verl" / "12.jsonl").read_bytes(), "session.jsonl", "line"),
    "skyrl": ((FIXTURES / "skyrl" / "searchR1_nq.jsonl").read_bytes(), "session.jsonl", "line"),
    "rllm": ((FIXTURES / "rllm" / "episode_hash1a2b3c4d_idtask7_0.json").read_bytes(), "session.json", "trajectories"),
    "openhands": ((FIXTURES / "openhands" / "trajectory.json").read_bytes(), "session.json", ""),
    "chat": ((FIXTURES / "chat" / "looping.json").read_bytes(), "session.json", "messages"),
}


def _padded(record: dict[str, Any]) -> dict[str, Any]:
    return {"note": BIG, **record}  # first: every key that says what the record is comes after


def inflated(fmt: str) -> bytes:
    """The format's sample with its first record longer than the head."""
    data, _, where = SAMPLES[fmt]
    if where == "text":  # plain text: a first step whose output fills the head
        first, rest = data.split(b"<output>", 1)
        return first + b"<output>" + BIG.encode() + b"\n" + rest
    if where == "line":
        lines = data.split(b"\n")
        index = next(i for i, line in enumerate(lines) if line.strip())
        lines[index] = orjson.dumps(_padded(orjson.loads(lines[index])))
        return b"\n".join(lines)
    doc = orjson.loads(data)
    items = doc if where == "" else doc[where]
    items[0] = _padded(items[0])
    return orjson.dumps(doc)


def _calls(path: Path, fmt: str | None = None) -> list[tuple[str, str, bool]]:
    found = []
    for session in read(str(path), fmt):
        found += [(c.name, json.dumps(c.input, sort_keys=True), c.error) for c in calls(session)]
    return found


def _events(path: Path) -> list[tuple[str, Any, Any, Any, Any]]:
    """Each event of each session: its kind, tool, input, error and place."""
    return [
        (
            type(e).__name__,
            getattr(e, "name", None),
            json.dumps(getattr(e, "input", None)),
            getattr(e, "error", None),
            e.source_ref,
        )
        for session in read(str(path))
        for e in session
    ]


def test_every_reader_has_a_sample():
    assert set(SAMPLES) == set(FORMATS)


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_a_first_record_past_the_head_is_told_by_its_structure(tmp_path, fmt):
    data, name, _ = SAMPLES[fmt]
    plain, long = tmp_path / "plain" / name, tmp_path / "long" / name
    plain.parent.mkdir()
    long.parent.mkdir()
    plain.write_bytes(data)
    long.write_bytes(inflated(fmt))
    first = long.read_bytes().lstrip().split(b"\n", 1)[0]
    assert len(first) > HEAD_SIZE or fmt not in (
        "events",
        "asciicast",
        "claude-code",
        "codex",
        "copilot",
        "cursor",
        "gemini-cli",
        "qwen-code",
        "opencode",
        "cline",
        "verl",
        "skyrl",
    )
    expected = _events(plain)
    assert expected and (_calls(plain) or fmt == "asciicast"), "the sample has calls"
    assert (
        [s.format for s in read(str(long))]
        == [s.format for s in read(str(plain))]
        == [fmt] * len(list(read(str(plain))))
    )
    assert _events(long) == expected


def test_a_cline_session_file_whose_first_message_is_past_the_head(tmp_path):
    """Cline's other form (its sample above is `--json` output): the session file, one
    indented document whose first message is longer than the head."""
    data = (FIXTURES / "cline" / "3.0.65" / "loop" / "session.messages.json").read_bytes()
    doc = orjson.loads(data)
    doc["messages"][0] = _padded(doc["messages"][0])
    plain, long = tmp_path / "plain.json", tmp_path / "long.json"
    plain.write_bytes(data)
    long.write_text(json.dumps(doc, indent=1))
    assert [s.format for s in read(str(long))] == [s.format for s in read(str(plain))] == ["cline"]
    assert _events(long) == _events(plain) and _calls(plain)


# -- a Codex rollout whose first line is 1 MiB -------------------------------------------

_ROLLOUT = fixture("codex", "looping.jsonl")


def _rollout(compact: bool = True, type_first: bool = False) -> bytes:
    """A rollout in the shape Codex 0.171 writes, its `session_meta` carrying 1 MiB of
    the user's instructions; `compact` as Codex writes it, else as `json.dumps` would
    save it again; `type_first`: the same keys in another order."""
    lines = Path(_ROLLOUT).read_bytes().split(b"\n")
    meta = {
        "timestamp": "2026-11-20T10:00:00.000Z",
        "ordinal": 0,
        "type": "session_meta",
        "payload": {
            "id": "r",
            "cli_version": "0.171.0",
            "base_instructions": {"text": "Read AGENTS.md first. " * ((1 << 20) // 22 + 1)},
        },
    }
    if type_first:
        meta = {"type": meta["type"], "payload": meta["payload"], "timestamp": meta["timestamp"]}
    first = orjson.dumps(meta) if compact else json.dumps(meta).encode()
    assert len(first) >= 1 << 20
    return first + b"\n" + b"\n".join(lines[1:] if orjson.loads(lines[0]).get("type") == "session_meta" else lines)


@pytest.mark.parametrize(("compact", "type_first"), [(True, False), (False, False), (True, True)])
def test_a_rollout_whose_first_line_is_1_mib_is_codex(tmp_path, compact, type_first):
    path = tmp_path / "rollout-2026-11-20T10-00-00-r.jsonl"
    path.write_bytes(_rollout(compact, type_first))
    sessions = list(read(str(path)))
    assert [s.format for s in sessions] == ["codex"]
    assert len(calls(sessions[0])) == len(_calls(Path(_ROLLOUT)))


def test_a_1_mib_first_line_from_standard_input_is_codex(monkeypatch):
    data = _rollout(compact=False)

    class Stdin:
        buffer = io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]

    monkeypatch.setattr(sys, "stdin", Stdin)
    stream = open_stdin()
    head, stream = sniff_head(stream)
    assert detect("-", head) == "codex"
    sessions = list(read("-", "codex", stream))  # every byte read to sniff is read again
    assert len(calls(sessions[0])) == len(_calls(Path(_ROLLOUT)))


def test_a_1_mib_first_line_piped_to_scan(tmp_path):
    data = _rollout(compact=False)
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", "--json", "-"], input=data, capture_output=True, timeout=120
    )
    assert done.returncode in (0, 1), done.stderr
    (record,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert record["format"] == "codex" and record["actions"] == len(_calls(Path(_ROLLOUT)))


def test_the_sniffed_head_is_the_structure_and_leaves_the_stream_at_its_start(tmp_path):
    path = tmp_path / "rollout.jsonl"
    data = _rollout(compact=False)
    path.write_bytes(data)
    with open(path, "rb", buffering=HEAD_SIZE) as fh:
        head, same = sniff_head(fh)  # type: ignore[arg-type]
        assert same is fh and fh.tell() == 0
        first = head.split(b"\n", 1)[0]
        assert len(first) < 8 * 1024  # the structure of 1 MiB: its long string cut
        meta = orjson.loads(first)
        assert meta["type"] == "session_meta" and meta["payload"]["id"] == "r"
        assert same.read() == data


def test_plain_text_is_sniffed_as_it_is(tmp_path):
    data = _tb_console() * 2000
    head, _ = sniff_head(io.BufferedReader(io.BytesIO(data), HEAD_SIZE))  # type: ignore[arg-type]
    assert head == data[:HEAD_SIZE]


def test_openhands_output_whose_first_instance_is_past_the_head(tmp_path):
    # evaluation output: one instance a line, each holding its whole history
    data = (FIXTURES / "openhands" / "output.jsonl").read_bytes()
    lines = data.split(b"\n")
    lines[0] = orjson.dumps({"note": BIG, **orjson.loads(lines[0])})
    plain, long = tmp_path / "plain.jsonl", tmp_path / "long.jsonl"
    plain.write_bytes(data)
    long.write_bytes(b"\n".join(lines))
    assert len(lines[0]) > HEAD_SIZE
    assert [s.format for s in read(str(long))] == [s.format for s in read(str(plain))]
    assert _events(long) == _events(plain) and _calls(plain)


def test_a_1_mib_first_line_followed_as_it_is_written(tmp_path):
    from loopwatch._supervise.transcript import Follower

    path = tmp_path / "rollout.jsonl"
    data = _rollout(compact=False)
    follower = Follower(str(path), ["my-harness"], cwd=str(tmp_path), env={})
    follower.start()
    events = []
    with open(path, "wb") as out:
        for i in range(0, len(data), HEAD_SIZE):
            out.write(data[i : i + HEAD_SIZE])
            out.flush()
            events += follower.poll(float(i))
    events += follower.finish()
    assert follower.format == "codex"
    assert len(calls(events)) == len(_calls(Path(_ROLLOUT))) > 0


# -- the mechanism: a cut record read as far as it goes, a head of structure ---------------

# Integers in orjson's exact range: it reads one outside 64 bits as a float, whole or cut
# (the parser's property, which every reader shares; not the cut's).
_integers = st.integers(-(2**63), 2**64 - 1)
_values = st.recursive(
    st.none() | st.booleans() | _integers | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _is_prefix(part: Any, whole: Any, last: bool) -> bool:
    """Is `part` what `whole` holds up to some point: every member but the last equal,
    the last itself a prefix (a string its start)?"""
    if isinstance(whole, dict):
        if not isinstance(part, dict) or list(part) != list(whole)[: len(part)]:
            return False
        keys = list(part)
        return all(
            _is_prefix(part[k], whole[k], last and i == len(keys) - 1)
            if last and i == len(keys) - 1
            else part[k] == whole[k]
            for i, k in enumerate(keys)
        )
    if isinstance(whole, list):
        if not isinstance(part, list) or len(part) > len(whole):
            return False
        return all(
            _is_prefix(p, w, last and i == len(part) - 1) if last and i == len(part) - 1 else p == w
            for i, (p, w) in enumerate(zip(part, whole, strict=False))
        )
    if isinstance(whole, str) and isinstance(part, str) and last:
        return whole.startswith(part)
    return part == whole


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _values, min_size=1, max_size=5), st.booleans(), st.data())
def test_a_cut_record_is_read_as_far_as_it_goes(record, ascii_only, data):
    text = json.dumps(record, ensure_ascii=ascii_only).encode()
    cut = data.draw(st.integers(1, len(text)))
    found = _completed(text[:cut])
    assert found is not None and _is_prefix(found, record, last=True)
    assert _completed(text) == record


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=8), _values, max_size=4), min_size=1, max_size=8), st.data())
def test_the_structure_head_is_the_same_records_with_long_strings_cut(records, data):
    long = data.draw(st.text(min_size=1, max_size=3).map(lambda s: s * 3000))
    records = [{"long": long, **r} for r in records]
    text = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)
    stream = io.BufferedReader(io.BytesIO(text), HEAD_SIZE)  # type: ignore[arg-type]
    head = structure_head(stream, HEAD_SIZE)
    lines = head.split(b"\n")
    assert len(lines[0]) < len(text.split(b"\n", 1)[0]) or len(long.encode()) <= 2048
    for line, record in zip(lines[:-1], records, strict=False):
        cut = json.loads(line)
        assert list(cut) == list(record)
        assert {k: v for k, v in cut.items() if k != "long"} == {k: v for k, v in record.items() if k != "long"}
        kept = cut["long"]  # the string's first bytes, then its last
        head = next((i for i, (a, b) in enumerate(zip(kept, long, strict=False)) if a != b), len(kept))
        assert head > 0 and long.endswith(kept[head:])


@pytest.mark.slow
def test_a_rollout_the_real_codex_wrote_with_1_mib_of_instructions(tmp_path):
    from codex_support import CodexHome, ScriptedResponses, require_codex, say, shell

    codex = require_codex()
    with ScriptedResponses([shell("ls /nonexistent-dir-xyz")] * 4 + [say("done")]) as server:
        home = CodexHome(tmp_path, server, codex)
        instructions = tmp_path / "instructions.md"
        instructions.write_text("# House rules\n" + "Read every file before you change it. " * 30000)
        config = home.codex_home / "config.toml"
        config.write_text(f'model_instructions_file = "{instructions}"\n' + config.read_text())
        done = home.exec("list the missing dir")
    assert done.returncode == 0, done.stderr
    (rollout,) = home.rollouts()
    first = rollout.read_bytes().split(b"\n", 1)[0]
    assert len(first) > 1 << 20 and orjson.loads(first)["type"] == "session_meta"  # as Codex writes it
    (session,) = list(read(str(rollout)))
    assert session.format == "codex" and [c.name for c in calls(session)] == ["exec_command"] * 4
