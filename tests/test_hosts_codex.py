"""Codex's shapes, on the real captures of Codex 0.171.0 in ../shared/clients/codex
(skipped when absent): hook payloads, rollouts, `codex exec --json` streams. And the
pieces of `loopwatch._hosts.codex` they rely on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from readers_support import calls, events_of, one_session, stop_of

from loopwatch._core.config import Config
from loopwatch._core.fingerprint import normalize
from loopwatch._hook.payload import parse
from loopwatch._hosts import codex
from loopwatch._readers import detect
from loopwatch._analysis.replay import replay

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "clients" / "codex"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/clients/codex (the real captures) is absent")
ROLLOUTS = SHARED / "rollouts"
LOOPS = ["a-plain-loop-rollout.jsonl", "c2-hooks-bypass-trust-rollout.jsonl", "c4-hooks-trusted-rollout.jsonl"]


# -- rollouts ----------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("name", LOOPS)
def test_twelve_identical_results_read_as_identical(name):
    _session, events = events_of(str(ROLLOUTS / name))
    ran = [c for c in calls(events) if not str(c.result).startswith("Command blocked")]
    assert ran and all(c.name == "exec_command" and c.error for c in ran)  # `Process exited with code 2`
    assert len({normalize(str(c.result)) for c in ran}) == 1  # the `Chunk ID: <hex>` differs on each


@needs_shared
def test_the_plain_loop_stops_at_the_fourth_call_not_the_sixth():
    result = replay(one_session(str(ROLLOUTS / "a-plain-loop-rollout.jsonl")), Config.make())
    assert result.verdict is not None and result.verdict["at_action"] == 4
    assert result.saved is not None and result.saved["actions"] == 8  # of 12


@needs_shared
def test_exit_codes_come_from_item_completed(tmp_path):
    """0.171 has no `exec_command_end`; without the header line the code is still known."""
    lines = (ROLLOUTS / "a-plain-loop-rollout.jsonl").read_text().splitlines()
    assert not any('"exec_command_end"' in line for line in lines)
    stripped = []
    for line in lines:
        obj = json.loads(line)
        payload = obj.get("payload") or {}
        if payload.get("type") == "function_call_output":
            payload["output"] = payload["output"].replace("Process exited with code 2\n", "")
        stripped.append(json.dumps(obj))
    path = tmp_path / "rollout-no-header.jsonl"
    path.write_text("\n".join(stripped) + "\n")
    _, events = events_of(str(path))
    assert [c.error for c in calls(events)] == [True] * 12


@needs_shared
@pytest.mark.parametrize("size", [70_000, 1_000_000])
def test_a_first_line_of_any_length_is_still_a_rollout(tmp_path, size):
    lines = (ROLLOUTS / "a-plain-loop-rollout.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert list(first)[:3] == ["timestamp", "ordinal", "type"]  # as 0.171 writes it
    first["payload"]["base_instructions"]["text"] += "x" * size
    path = tmp_path / "rollout-long.jsonl"
    path.write_text("\n".join([json.dumps(first, separators=(",", ":"))] + lines[1:]) + "\n")
    assert detect(str(path), path.read_bytes()[: 64 * 1024]) == "codex"
    _session, events = events_of(str(path))
    assert len(calls(events)) == 12


@needs_shared
def test_healthy_rollout_is_not_stopped():
    assert stop_of(one_session(str(ROLLOUTS / "h-run-healthy-rollout.jsonl"))) is None


@needs_shared
@pytest.mark.parametrize("name", ["b-run-loop.jsonl", "a-plain-loop.jsonl"])
def test_exec_json_failures(name):
    _, events = events_of(str(SHARED / "streams" / name))
    ran = calls(events)
    assert ran and all(c.name == "command_execution" and c.error for c in ran)


# -- hook payloads -----------------------------------------------------------------------


def _payload_pairs(scenario: str) -> list[dict]:
    folder = SHARED / "payloads" / scenario
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.in.json"))]


@needs_shared
def test_a_real_post_tool_use_failure_reads_as_a_failure(tmp_path):
    """The payload's `tool_response` is the bare output; the exit code is in the rollout
    it names. (The captured paths are of the capture machine: the rollout is copied to
    where the payload says it is, under tmp_path.)"""
    payloads = [p for p in _payload_pairs("c2-bypass-trust") if p["hook_event_name"] == "PostToolUse"]
    assert len(payloads) == 3
    rollout = tmp_path / Path(payloads[0]["transcript_path"]).name
    shutil.copy(ROLLOUTS / "c2-hooks-bypass-trust-rollout.jsonl", rollout)
    for raw in payloads:
        assert raw["tool_response"].startswith("ls: cannot access")  # no header, no code
        raw["transcript_path"] = str(rollout)
        call = parse(json.dumps(raw).encode(), "auto").calls[0]
        assert (call.name, call.error) == ("Bash", True)
        raw["transcript_path"] = str(tmp_path / "rollout-missing.jsonl")
        assert parse(json.dumps(raw).encode(), "auto").calls[0].error is False  # unknown: not a failure


@needs_shared
def test_real_healthy_payloads_read_as_successes(tmp_path):
    for raw in _payload_pairs("c5-healthy-bypass-trust"):
        if raw["hook_event_name"] == "PostToolUse":
            call = parse(json.dumps(raw).encode(), "auto").calls[0]
            assert call.error is False


def test_rollout_lookup_reads_only_rollouts(tmp_path):
    line = {
        "type": "event_msg",
        "payload": {
            "type": "item_completed",
            "item": {"type": "CommandExecution", "id": "call_1", "exit_code": 3, "status": "failed"},
        },
    }
    for name in ("rollout-x.jsonl", "notes.jsonl"):
        (tmp_path / name).write_text(json.dumps(line) + "\n")
    assert codex.rollout_exit_code(str(tmp_path / "rollout-x.jsonl"), "call_1") == 3
    assert codex.rollout_exit_code(str(tmp_path / "rollout-x.jsonl"), "call_2") is None
    assert codex.rollout_exit_code(str(tmp_path / "notes.jsonl"), "call_1") is None
    assert codex.rollout_exit_code(None, "call_1") is None


# -- one rule, one tool ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, code",
    [
        ("Chunk ID: e1eabb\nWall time: 0.0000 seconds\nProcess exited with code 2\nOutput:\nx", 2),
        ("Exit code: 0\nWall time: 1 seconds\nOutput:\nok", 0),
        ("Exit code 1\n", 1),
        ("ls: cannot access 'x'\n", None),
        ("Output:\n" + "line\n" * 20 + "Process exited with code 2\n", None),  # not in the header: output text
    ],
)
def test_output_exit_code(text, code):
    assert codex.output_exit_code(text) == code


def test_the_three_names_of_the_shell_tool_share_per_tool_rules(tmp_path):
    config = Config.make({"tools": {"Bash": {"role": "exempt"}}})
    tools = codex.shared_tool_rules(config.tools)
    assert {name: tools[name].role for name in ("exec_command", "command_execution", "Bash")} == dict.fromkeys(
        ("exec_command", "command_execution", "Bash"), "exempt"
    )
    mine = Config.make({"tools": {"Bash": {"role": "exempt"}, "exec_command": {"role": "poller"}}})
    assert codex.shared_tool_rules(mine.tools)["exec_command"].role == "poller"  # the user's own rule wins


@needs_shared
def test_a_rule_for_bash_applies_to_a_rollouts_exec_command():
    path = str(ROLLOUTS / "a-plain-loop-rollout.jsonl")
    exempt = Config.make({"tools": {"Bash": {"role": "exempt"}}})
    assert replay(one_session(path), exempt).stopped is False
    assert replay(one_session(path), Config.make()).stopped is True


def test_trusted_hash_follows_codex_normalization():
    handler = {"type": "command", "command": "python3 -m loopwatch hook codex", "timeout": 30}
    a = codex.trusted_hash("PreToolUse", handler)
    assert a == codex.trusted_hash("PreToolUse", {**handler, "async": False})  # the default, written out
    assert a != codex.trusted_hash("PostToolUse", handler)
    assert a != codex.trusted_hash("PreToolUse", {**handler, "timeout": 31})
    assert codex.trusted_hash("PreToolUse", {"command": "x"}) == codex.trusted_hash(
        "PreToolUse", {"command": "x", "timeout": 600}
    )
    assert codex.trusted_hash("Stop", {"command": "x"}, "Bash") == codex.trusted_hash("Stop", {"command": "x"})
    assert (
        codex.hook_key("/h/.codex/hooks.json", "UserPromptSubmit", 2, 0)
        == "/h/.codex/hooks.json:user_prompt_submit:2:0"
    )


# -- masking -----------------------------------------------------------------------------

_hex = st.text(alphabet="0123456789abcdef", min_size=6, max_size=6).filter(
    lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s)
)


@given(_hex, _hex)
def test_a_random_chunk_id_never_tells_two_results_apart(a, b):
    body = "Wall time: 0.0000 seconds\nProcess exited with code 2\nOutput:\nls: cannot access '/x': No such file\n"
    assert normalize(f"Chunk ID: {a}\n{body}") == normalize(f"Chunk ID: {b}\n{body}")


def test_hex_masking_keeps_words():
    assert normalize("deadbeef cafe") == "deadbeef cafe"  # no digit: words, not ids
    assert normalize("id 01a2303a-294e-7363-9b2e-56f628c7dd1d") == "id #-#-#-#-#"


# -- one rule for a Codex output, for the hook and the reader ------------------------------


@pytest.mark.parametrize(
    "output, text, failed",
    [
        ({"content": "boom", "success": False}, "boom", True),  # the rollout's failure form
        ({"content": "fine", "success": True}, "fine", False),
        ({"exit_code": 2, "output": "x"}, "x", True),  # a structured hook result
        ({"exitCode": 0, "output": "x"}, "x", False),
        ({"is_error": True, "content": "no"}, "no", True),
        ({"exit_code": 0, "success": False, "output": "x"}, "x", True),  # a failure said anywhere wins
        ({"exit_code": True, "output": "x"}, "x", None),  # a bool is no exit code
        ('{"output": "done", "metadata": {"exit_code": 0}}', "done", False),  # older rollouts
        ('{"output": "oops", "metadata": {"exit_code": 1}}', "oops", True),
        ('{"output": "?", "metadata": {}}', "?", None),
        ("Chunk ID: e1\nWall time: 0 seconds\nProcess exited with code 2\nOutput:\nx", None, True),
        ("Exit code: 0\nOutput:\nok", None, False),
        ("ls: cannot access 'x'\n", None, None),
        ({"content": [{"type": "input_text", "text": "hi"}]}, [{"type": "input_text", "text": "hi"}], None),
    ],
)
def test_output_status(output, text, failed):
    got_text, got_failed = codex.output_status(output)
    assert got_failed is failed
    assert got_text == (output if text is None else text)


_OUTPUTS = st.recursive(
    st.one_of(
        st.text(max_size=30),
        st.sampled_from(
            [
                "Exit code: 0\nOutput:\n",
                "Process exited with code 3\n",
                "Exit code 1\n",
                '{"output": "o", "metadata": {"exit_code": 2}}',
                '{"output": "o", "metadata": {"exit_code": 0}}',
            ]
        ),
        st.integers(-2, 3),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.dictionaries(
        st.sampled_from(["exit_code", "exitCode", "success", "is_error", "content", "output", "other"]),
        inner,
        max_size=4,
    ),
    max_leaves=6,
)


@given(_OUTPUTS)
def test_the_hook_and_the_reader_judge_an_output_alike(output):
    """The hook (`hosts.codex.output_failed`) and the rollout reader
    (`readers.codex._output`) judge an output by one rule."""
    from loopwatch._hosts.codex import output_failed as _failed
    from loopwatch._readers.codex import _output

    assert _failed(output) == _output(output, None)[1]
    _, error, known = _output(output, None)
    assert known or not error


@needs_shared
def test_every_real_output_is_judged_alike_by_the_hook_and_the_reader():
    from loopwatch._hosts.codex import output_failed as _failed
    from loopwatch._readers.codex import _output

    outputs = []
    for path in sorted(ROLLOUTS.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            payload = json.loads(line).get("payload") or {}
            if payload.get("type") in ("function_call_output", "custom_tool_call_output"):
                outputs.append(payload.get("output"))
    for raw in _payload_pairs("c2-bypass-trust") + _payload_pairs("c5-healthy-bypass-trust"):
        if raw["hook_event_name"] == "PostToolUse":
            outputs.append(raw["tool_response"])
    assert len(outputs) > 20
    assert any(_failed(o) for o in outputs) and not all(_failed(o) for o in outputs)
    for output in outputs:
        assert _failed(output) == _output(output, None)[1], str(output)[:200]


def test_a_command_item_without_a_code_is_1_when_failed_else_0():
    item = {"type": "CommandExecution", "id": "c", "status": "failed"}
    assert codex.item_exit_code(item) == ("c", 1)
    assert codex.item_exit_code({**item, "status": "completed"}) == ("c", 0)
    assert codex.item_exit_code({**item, "exit_code": 7}) == ("c", 7)
    assert codex.item_exit_code({**item, "type": "command_execution", "exit_code": 0}) == ("c", 0)
    assert codex.item_exit_code({"type": "AgentMessage", "id": "c"}) is None
