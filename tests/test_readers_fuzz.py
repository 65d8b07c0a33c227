"""Every reader, fuzzed: mutated real and written transcripts through `scan --json`.

Seeds are the repository's fixtures, small transcripts written here for the formats
that have none, and (when ../shared/corpus is on the machine) one real file of each
corpus format. Hypothesis mutates them (truncation, flipped bytes, a byte-order mark,
wrong-typed and huge values, deep nesting, lone surrogates, junk lines) and each
mutant is scanned twice, detected and with `--format` forcing the reader. Asserted:
no traceback, an exit status of 0, 1 or 2, a record for the file, and time bounded
per KiB (generous: it catches a hang or a quadratic path, not a slow machine).

Bounded: a fixed number of examples per reader, no deadline per example (the machine
is shared); in CI (`CI` set) the `ci` profile derandomizes, so a run is reproducible.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwatch._cli import cli
from loopwatch._readers import FORMATS

from conftest import jsonl, looping_events

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev", max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
CORPUS = HERE.parent.parent / "shared" / "corpus"
SECONDS_PER_KIB = 0.05  # two orders of magnitude above the readers' measured speed
SECONDS_FLOOR = 5.0  # imports and a first read, in CPU time


def _written() -> dict[str, list[tuple[str, bytes]]]:
    loop = [
        {
            "action": "pytest -x",
            "observation": "E   ImportError: cannot import name 'x'",
            "response": "try",
            "thought": "t",
        }
    ]
    swe = {
        "environment": "swe_main",
        "trajectory": loop * 5,
        "info": {"exit_status": "submitted", "model_stats": {"tokens_sent": 5}},
    }
    messages = [{"role": "system", "content": "You are a helper."}, {"role": "user", "content": "fix it"}]
    for i in range(5):
        messages.append(
            {
                "role": "assistant",
                "content": "THOUGHT: again\n```bash\npytest -x\n```",
                "extra": {
                    "response": {"created": 1700000000 + i, "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
                },
            }
        )
        messages.append({"role": "user", "content": "<returncode>1</returncode>\n<output>E fail</output>"})
    mini = {
        "info": {"mini_version": "1.0", "model_stats": {"instance_cost": 0.1}},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }
    steps = [
        {
            "step_id": i + 1,
            "source": "agent",
            "message": "again",
            "metrics": {"prompt_tokens": 5},
            "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "bash", "arguments": {"command": "pytest -x"}}],
            "observation": {"results": [{"source_call_id": f"c{i}", "content": "E fail"}]},
        }
        for i in range(5)
    ]
    atif = {"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a"}, "steps": steps}
    console = "".join(
        f"mini-swe-agent (step {i}, $0.0{i}):\nTHOUGHT: again\n```bash\npytest -x\n```\n"
        "<returncode>1</returncode>\n<output>E fail</output>\n"
        for i in range(1, 6)
    )
    cast = [json.dumps({"version": 2, "width": 80, "height": 24})]
    cast += [json.dumps([0.5 * i, "o", "E   ImportError: cannot import name 'x'\r\n"]) for i in range(12)]
    cast.insert(1, json.dumps([0.0, "i", "pytest -x\r"]))
    return {
        "asciicast": [("run.cast", ("\n".join(cast) + "\n").encode())],
        "swe-agent": [("run.traj", json.dumps(swe).encode())],
        "mini-swe-agent": [("run.traj.json", json.dumps(mini).encode())],
        "atif": [("trajectory.json", json.dumps(atif).encode())],
        "tb-console": [("agent.log", console.encode())],
        "events": [("events.jsonl", jsonl(looping_events()).encode())],
    }


def _corpus(fmt: str) -> list[tuple[str, bytes]]:
    pattern = {
        "swe-agent": "swe-agent-traj/**/*.traj",
        "mini-swe-agent": "mini-swe-agent-traj-json/**/*.traj.json",
        "atif": "atif/**/trajectory.json",
        "tb-console": "tb1-console-log/**/agent.log",
    }.get(fmt)
    if pattern is None or not CORPUS.is_dir():
        return []
    # the smallest, so a mutant stays quick to scan
    found = sorted(CORPUS.glob(pattern), key=lambda p: p.stat().st_size)[:1]
    return [(p.name, p.read_bytes()) for p in found]


def seeds(fmt: str) -> list[tuple[str, bytes]]:
    folder = {
        "claude-code": "claude-code",
        "qwen-code": "qwen-code",
        "codex": "codex",
        "copilot": "copilot",
        "cursor": "cursor",  # written from Cursor's documentation
        "gemini-cli": "gemini-cli",
        "openhands": "openhands",
        "chat": "chat",
        "verl": "verl",
        "skyrl": "skyrl",
        "rllm": "rllm",
        "cline": "cline/3.0.65/loop",
        "opencode": "opencode",
    }.get(fmt)
    mine = [(p.name, p.read_bytes()) for p in sorted((FIXTURES / folder).glob("*")) if p.is_file()] if folder else []
    if fmt == "cline":  # Cline writes its session file indented; one line gives the mutations a document to change
        compact = json.dumps(json.loads((FIXTURES / folder / "session.messages.json").read_bytes()))
        mine.append(("compact.messages.json", compact.encode()))
    return mine + _written().get(fmt, []) + _corpus(fmt)


def test_every_reader_has_seeds():
    assert all(seeds(fmt) for fmt in FORMATS), [fmt for fmt in FORMATS if not seeds(fmt)]


# -- mutations ---------------------------------------------------------------------------

# The values that did harm first: Hypothesis draws early elements more often.
ODD_VALUES = [2**70, "5", "\ud800", -(2**64), None, 1e308, [], {}, True, "\udfff x", "\ufeff", "", 0.5]


_DEEP = "\x00deep\x00"  # stands for a deeply nested list until the text is written


def _nodes(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _nodes(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nodes(item, path + (index,))


def _replace(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)
    return copy


@st.composite
def mutant(draw, fmt: str) -> tuple[str, bytes]:
    name, data = draw(st.sampled_from(seeds(fmt)))
    kind = draw(st.sampled_from(["value", "bom", "truncate", "flip", "value", "deep", "junk", "several"]))
    rounds = draw(st.integers(2, 4)) if kind == "several" else 1
    for _ in range(rounds):
        step = (
            draw(st.sampled_from(["value", "bom", "truncate", "flip", "deep", "junk"])) if kind == "several" else kind
        )
        data = _mutate(draw, step, data)
    return name, data


def _mutate(draw, kind: str, data: bytes) -> bytes:
    if kind == "truncate":
        return data[: draw(st.integers(0, max(0, len(data) - 1)))]
    if kind == "flip":
        buf = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            if buf:
                buf[draw(st.integers(0, len(buf) - 1))] = draw(st.integers(0, 255))
        return bytes(buf)
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "junk":
        junk = draw(
            st.sampled_from([b"not json\n", b'{"type": \n', b"[1, 2\n", b"\x00\x01\x02\n", b"{}\n", b'"\\ud800"\n'])
        )
        lines = data.split(b"\n")
        lines.insert(draw(st.integers(0, len(lines))), junk.rstrip(b"\n"))
        return b"\n".join(lines)
    # value / deep: change one node of a JSON document, or of one JSON line
    lines = data.split(b"\n")
    candidates = [i for i, line in enumerate(lines) if line.strip()[:1] in (b"{", b"[")]
    if not candidates:
        return data
    index = draw(st.sampled_from(candidates))
    target = lines[index] if len(candidates) > 1 or len(lines) > 1 else data
    try:
        value = json.loads(target)
    except (ValueError, RecursionError):  # an earlier round nested it too deep to mutate again
        return data
    nodes = list(_nodes(value))[:5000]
    # Half the time a number (tokens, costs, times, counts: where a wrong type or a
    # huge value does harm), else any node.
    numbers = [p for p, v in nodes if isinstance(v, (int, float)) and not isinstance(v, bool)]
    new = _DEEP if kind == "deep" else draw(st.sampled_from(ODD_VALUES))
    if kind == "value" and numbers and draw(st.booleans()):
        for path in numbers:  # every number at once: one of them is the total that is written out
            value = _replace(value, path, new)
    else:
        path = draw(st.sampled_from(numbers if numbers and draw(st.booleans()) else [p for p, _ in nodes]))
        value = _replace(value, path, new)
    encoded = json.dumps(value).encode()
    if kind == "deep":  # written as text: the encoder itself stops at 1000 levels
        depth = draw(st.integers(100, 5000))
        encoded = encoded.replace(json.dumps(_DEEP).encode(), b"[" * depth + b'"x"' + b"]" * depth, 1)
    if target is data:
        return encoded
    lines[index] = encoded
    return b"\n".join(lines)


# -- the property ------------------------------------------------------------------------


def _scan(path: str, *options: str):
    result = CliRunner().invoke(cli, ["scan", "--no-progress", "--json", "--jobs", "1", *options, path])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2), result.exit_code
    assert "Traceback" not in result.stderr
    found = [json.loads(line) for line in result.stdout.splitlines()]
    assert found and all(r["path"] == path for r in found), result.stdout[:500]
    assert result.exit_code != 2 or any(r["error"] for r in found)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_fuzzed_transcripts_never_break_a_scan(fmt):
    @settings(
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
    )
    @given(mutant(fmt))
    def check(case):
        name, data = case
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, name)
            with open(path, "wb") as fh:
                fh.write(data)
            bound = SECONDS_FLOOR + SECONDS_PER_KIB * len(data) / 1024
            for options in ((), ("--format", fmt)):
                # CPU time of this process (the scan runs in it): a busy machine that
                # preempts the test is not a slow reader.
                start = time.process_time()
                _scan(path, *options)
                took = time.process_time() - start
                assert took < bound, f"{took:.1f}s for {len(data) / 1024:.0f} KiB"

    check()


# -- a wrong-typed `type` ----------------------------------------------------------------

# A record's `type` (and OpenHands' `action` / `observation`, which say the same) is how
# every reader tells records apart; one that is a list or an object must cost that record
# at most, never the file (a list or a dict is unhashable: `kind in {...}` raised).
KIND_KEYS = ("type", "action", "observation")
WRONG_KINDS = [[], {}, ["tool"], {"type": "tool"}, [["x"]], 3, None, True]
LINE_FORMATS = ("events", "codex", "claude-code", "openhands")


@st.composite
def wrong_kind(draw, fmt: str) -> tuple[str, bytes]:
    """A seed with one object's `type` (present or added) made a wrong type: at any
    depth, in one line of a JSON Lines file or anywhere in a JSON document."""
    name, data = draw(st.sampled_from([s for s in seeds(fmt) if _objects(s[1])]))
    lines = data.split(b"\n")
    candidates = [i for i, line in enumerate(lines) if line.strip()[:1] == b"{"]
    whole = (
        not candidates or len(lines) == 1 or len(candidates) == 1 and not lines[candidates[0]].strip().endswith(b"}")
    )
    index = -1 if whole else draw(st.sampled_from(candidates))
    try:
        value = json.loads(data if whole else lines[index])
    except ValueError:
        value = json.loads(data)
        whole = True
    objects = [path for path, node in _nodes(value) if isinstance(node, dict)][:5000]
    path = draw(st.sampled_from(objects))
    node = value
    for step in path:
        node = node[step]
    present = [k for k in KIND_KEYS if k in node]
    key = draw(st.sampled_from(present or ["type"]))
    value = _replace(value, path + (key,), draw(st.sampled_from(WRONG_KINDS))) if present else value
    if not present:
        node[key] = draw(st.sampled_from(WRONG_KINDS))
    encoded = json.dumps(value).encode()
    if whole:
        return name, encoded
    lines[index] = encoded
    return name, b"\n".join(lines)


def _objects(data: bytes) -> bool:
    try:
        return any(isinstance(json.loads(line), dict) for line in data.split(b"\n") if line.strip()[:1] == b"{")
    except ValueError:
        try:
            return isinstance(json.loads(data), (dict, list))
        except ValueError:
            return False


def _scan_one(path: str, *options: str) -> dict:
    result = CliRunner().invoke(cli, ["scan", "--no-progress", "--json", "--jobs", "1", *options, path])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stderr
    found = [json.loads(line) for line in result.stdout.splitlines()]
    assert found, result.stdout[:500]
    return found[0]


@pytest.mark.parametrize("fmt", [fmt for fmt in FORMATS if any(_objects(data) for _, data in seeds(fmt))])
def test_a_wrong_typed_type_never_breaks_a_reader(fmt):
    """Anywhere in any format: no reader fails on it (detected or forced). In a JSON Lines
    format, read as that format, the file stays readable: the other lines are read."""

    @settings(
        max_examples=30,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )
    @given(wrong_kind(fmt))
    def check(case):
        name, data = case
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, name)
            with open(path, "wb") as fh:
                fh.write(data)
            for options in ((), ("--format", fmt)):
                record = _scan_one(path, *options)
                assert not (record["error"] or "").startswith("reader failed"), record["error"]
            lines = [line for line in data.split(b"\n") if line.strip()]
            if fmt in LINE_FORMATS and len(lines) > 2:
                assert record["error"] is None, record["error"]  # not unreadable, nor cut short

    check()
