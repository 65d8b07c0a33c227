"""One replay engine and one `monitor_for`: `scan`, `evaluate` (here and on Ray's worker
function) give the same verdicts on the same sessions, with one monitor per agent and
the source's rules (Codex's one shell tool) applied alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopwatch._analysis.evaluation import Case, _load, replay_case, replay_cases
from loopwatch._analysis.replay import replay_file
from loopwatch._core.config import Config
from loopwatch._hosts.monitors import config_for, monitor_for

from conftest import jsonl, looping_events

BASH_RULE = {"Bash": {"ignore": ["workdir"]}}  # as a user writes it, for the hook's name


def codex_rollout(path: Path, calls: int = 8) -> Path:
    """A Codex rollout whose model runs `exec_command cat notes.txt` again and again,
    from a new `workdir` each time, with the same output."""
    lines = [
        {
            "timestamp": "2025-10-02T14:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "s1", "timestamp": "2025-10-02T14:00:00.000Z", "cwd": "/w", "cli_version": "0.171.0"},
        }
    ]
    for i in range(calls):
        at = f"2025-10-02T14:00:{10 + 2 * i:02}.000Z"
        arguments = json.dumps({"cmd": "cat notes.txt", "workdir": f"/w/{i}"})
        call = {"type": "function_call", "name": "exec_command", "call_id": f"c{i}", "arguments": arguments}
        output = {
            "type": "function_call_output",
            "call_id": f"c{i}",
            "output": "Process exited with code 0\nOutput:\nTODO\n",
        }
        lines += [
            {"timestamp": at, "type": "response_item", "payload": call},
            {"timestamp": at, "type": "response_item", "payload": output},
        ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def call(command: str, agent: str | None = None, error: bool = True) -> dict:
    event = {"type": "tool", "name": "Bash", "input": {"command": command}, "result": "E  failed", "error": error}
    return event | ({"agent": agent} if agent else {})


def scan_stop(path: Path, config: Config) -> tuple[str | None, int | None]:
    """The first stop `scan` reports: (signal, step in the format's numbering)."""
    (result,) = replay_file(str(path), config)
    assert result.error is None, result.error
    if result.verdict is None:
        return None, None
    step_of = _load(path.name, str(path.parent))[1]
    return result.verdict["signal"], step_of[result.verdict["source_ref"]]


def evaluate_stop(path: Path, config: Config) -> tuple[str | None, int | None]:
    (replayed,) = replay_cases([Case(path.name)], str(path.parent), [config], jobs=1)
    assert replayed.error is None, replayed.error
    return replayed.results[0].stop_signal, replayed.results[0].stop


def test_a_bash_rule_applies_to_codex_sessions_in_evaluate_as_in_scan(tmp_path):
    path = codex_rollout(tmp_path / "rollout-2025-10-02T14-00-00-s1.jsonl")
    ruled = Config.make(tools=BASH_RULE)
    # The rule makes the calls one call: a repeat, stopped, at the same step by both
    # (the same success: nudged at the 3rd copy, stopped from the 5th).
    assert scan_stop(path, ruled) == evaluate_stop(path, ruled) == ("repeat", 5)
    (replayed,) = replay_cases([Case(path.name)], str(path.parent), [ruled], jobs=1)
    assert (replayed.results[0].nudge, replayed.results[0].nudge_signal) == (3, "repeat")
    # Without it, `workdir` tells the calls apart: neither stops.
    assert scan_stop(path, Config.make()) == evaluate_stop(path, Config.make()) == (None, None)


def test_monitor_for_shares_a_codex_shell_rule_and_gives_claude_code_its_poller():
    config = Config.make(tools=BASH_RULE)
    codex = monitor_for("codex", config).config
    assert codex.rule("exec_command") == codex.rule("command_execution") == codex.rule("Bash")
    assert codex.rule("exec_command").ignore == frozenset({"workdir"})
    assert monitor_for(None, config).config.rule("exec_command").ignore != frozenset({"workdir"})
    assert config_for("claude-code", config).rule("BashOutput").role == "poller"
    assert config_for("codex", config).rule("BashOutput").role == ""
    # The user's own rule wins over a host's.
    mine = Config.make(tools={"BashOutput": {"role": "exempt"}})
    assert config_for("claude-code", mine).rule("BashOutput").role == "exempt"


def handoff(tmp_path: Path) -> Path:
    """A sub-agent runs a failing command three times and hands over; its Manager then
    runs the same command three times: six in a row for the session, three per agent."""
    events = [{"type": "user"}, call("ls", "Manager", error=False)]
    events += [call("pytest -x", "Editor") for _ in range(3)] + [call("pytest -x", "Manager") for _ in range(3)]
    path = tmp_path / "handoff.jsonl"
    path.write_text(jsonl(events))
    return path


def test_a_streak_never_runs_across_two_agents(tmp_path):
    path = handoff(tmp_path)
    config = Config.make()
    assert scan_stop(path, config) == evaluate_stop(path, config) == (None, None)
    # The same calls by one agent are a loop, stopped by both.
    single = tmp_path / "single.jsonl"
    single.write_text(path.read_text().replace('"agent": "Editor"', '"agent": "Manager"'))
    assert scan_stop(single, config) == evaluate_stop(single, config) != (None, None)


def test_a_sub_agents_stop_ends_it_alone_numbered_for_the_session(tmp_path):
    events = [{"type": "user"}, call("ls", "Manager", error=False), call("cat a", "Manager", error=False)]
    events += [call("pytest -x", "Editor") for _ in range(8)]
    events += [call(f"git add f{i}", "Manager", error=False) for i in range(3)]
    path = tmp_path / "sub.jsonl"
    path.write_text(jsonl(events))
    config = Config.make()
    (result,) = replay_file(str(path), config)
    stop = result.verdict
    assert stop is not None and stop["signal"] == "repeat"
    assert stop["at_action"] == 2 + 4  # the Editor's 4th call, the session's 6th
    assert stop["started_action"] == 3  # the Editor's first
    assert stop["at"] == 6.0  # no times recorded: a second per event of the session, whoever's
    assert result.actions == 13
    # Spared: the Editor's own later calls, not the Manager's, which go on.
    assert result.saved is not None and result.saved["actions"] == 4
    (replayed,) = replay_cases([Case(path.name)], str(tmp_path), [config], jobs=1)
    found = replayed.results[0]
    assert (found.stop, found.stop_agent, found.session_stop) == (6, "Editor", None)


def loop(tmp_path: Path) -> Path:
    path = tmp_path / "loop.jsonl"
    path.write_text(jsonl(looping_events(8)))
    return path


SESSIONS = {
    "loop": loop,
    "handoff": handoff,
    "codex": lambda tmp_path: codex_rollout(tmp_path / "rollout-2025-10-02T14-00-00-s1.jsonl"),
}


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_scan_evaluate_and_the_ray_worker_replay_alike(tmp_path, name):
    from loopwatch._analysis.ray_engine import _replay_chunk

    path = SESSIONS[name](tmp_path)
    configs = [Config.make(tools=BASH_RULE), Config.make(profile="attended", stop=True)]
    for config in configs:
        (local,) = replay_file(str(path), config)
        ((remote,),) = json.loads(_replay_chunk(str(tmp_path), [path.name], config, None)[0])
        assert remote["verdict"] == local.verdict and remote["interventions"] == local.interventions
    # evaluate, here (the function Ray's tasks run) and through the pool, under both at once
    direct = replay_case(Case(path.name), str(tmp_path), configs)
    (pooled,) = replay_cases([Case(path.name)], str(tmp_path), configs, jobs=1)
    assert direct.results == pooled.results
    for config, found in zip(configs, direct.results, strict=True):
        assert (found.stop_signal, found.stop) == scan_stop(path, config)


class _Child:
    """What `Supervisor` asks of a child here: is it running, and end it."""

    returncode = None

    def __init__(self) -> None:
        self.ended: list[float] = []

    def end(self, now: float) -> None:
        self.ended.append(now)


def test_run_judges_each_agent_of_a_transcript_with_its_own_monitor(tmp_path):
    from loopwatch._core.events import ToolCall
    from loopwatch._supervise.supervisor import Supervisor

    def judged(agents: list[str | None]) -> list[float]:
        with open(tmp_path / "stderr", "wb") as err:
            supervisor = Supervisor(["claude", "-p"], Config.make(), stderr=err.fileno())
            child = _Child()
            for at, agent in enumerate(agents, start=1):
                event = ToolCall("Bash", {"command": "pytest -x"}, "E  failed", error=True, at=float(at), agent=agent)
                supervisor._judge(child, event, float(at))  # type: ignore[arg-type]
        return child.ended

    # A sub-agent's three failing runs, then its parent's three: no agent looped.
    assert judged(["a1"] * 3 + [None] * 3) == []
    # One agent running it six times did.
    assert judged([None] * 6) != []


def test_run_and_the_hook_give_codex_its_one_shell_tool():
    from loopwatch._supervise.supervisor import Supervisor

    supervisor = Supervisor(["codex", "exec", "fix it"], Config.make(tools=BASH_RULE))
    assert supervisor.monitor.config.rule("exec_command").ignore == frozenset({"workdir"})
    assert Supervisor(["claude", "-p"], Config.make()).monitor.config.rule("BashOutput").role == "poller"
