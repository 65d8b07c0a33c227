"""Claude Agent SDK: `Loopwatch`'s hooks on the real Claude Code CLI the SDK drives, the
pinned and current releases (`cli_path`) and the one the SDK's wheel bundles, offline:
the scripted Anthropic API of `real_claude_support` on 127.0.0.1, a fresh HOME each.

What ran and what the model was told are read from the model's side (every request
the scripted API received: the tool results and reminders it carried); what the run
ended with, from the SDK's own messages."""

from __future__ import annotations

import asyncio
import gc
import re
from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk")

import claude_agent_sdk
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    ResultMessage,
    ToolResultBlock,
    UserMessage,
    query,
)
from real_claude_support import (
    CLAUDE_CODE_VERSION,
    CURRENT_CLAUDE_CODE_VERSION,
    LOOP_COMMAND,
    ClaudeRun,
    ScriptedAnthropic,
    Step,
    claude_binary,
    healthy_script,
    loop_script,
    reworded_script,
    subagent_script,
)

from loopwatch import Guard, Monitor
from loopwatch.adapters.claude_agent_sdk import HOOK_EVENTS, Loopwatch

BUNDLED = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
#: The CLI each test drives: the pinned release and the current one (installed from
#: npm, given as `cli_path`), and the SDK's own (no `cli_path`: the SDK finds it).
RELEASES = {"pinned": CLAUDE_CODE_VERSION, "current": CURRENT_CLAUDE_CODE_VERSION, "bundled": None}
UNATTENDED = {"profile": "unattended", "env": {}}
ATTENDED = {"profile": "attended", "env": {}}


def delegating_script() -> list[Step]:
    """The main agent runs the failing command twice itself, then hands the same
    command to a sub-agent (whose script is `loop`), then answers."""
    own = Step("Trying it myself.", "Bash", {"command": LOOP_COMMAND, "description": "List the directory"})
    return [own, own, *subagent_script()]


SCRIPTS = {"loop": loop_script(12), "reworded": reworded_script(12), "subagent": subagent_script()}


class Machine:
    """A user's machine for one session: a fresh HOME and work folder, the SDK's
    options pointing the CLI at the scripted model."""

    def __init__(self, root: Path, server: ScriptedAnthropic, release: str) -> None:
        version = RELEASES[release]
        self.cli = claude_binary(version) if version else None
        if self.cli is None and not BUNDLED.exists():
            pytest.skip("this claude-agent-sdk wheel bundles no CLI")
        self.run = ClaudeRun(root, server, self.cli or str(BUNDLED))
        self.errors: list[str] = []

    @property
    def work(self) -> Path:
        return self.run.work

    def options(self, loopwatch: Loopwatch | None) -> ClaudeAgentOptions:
        options = ClaudeAgentOptions(
            cli_path=self.cli,
            cwd=str(self.run.work),
            env=self.run.env(),
            permission_mode="bypassPermissions",
            stderr=self.errors.append,
        )
        return loopwatch.options(options) if loopwatch is not None else options


async def ask(machine: Machine, loopwatch: Loopwatch | None, prompt: str) -> list:
    return [message async for message in query(prompt=prompt, options=machine.options(loopwatch))]


def results(messages: list) -> list[ResultMessage]:
    return [m for m in messages if isinstance(m, ResultMessage)]


def tool_results(messages: list) -> dict[str, str]:
    """tool_use_id -> the result text the CLI reported, of every agent (the SDK passes a
    sub-agent's tool results on too)."""
    out = {}
    for message in messages:
        if isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    content = block.content
                    if isinstance(content, list):
                        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
                    out[block.tool_use_id] = content or ""
    return out


def said(text: str) -> str:
    """A refusal's own words: 2.1.332 puts "PreToolUse:Bash hook error: " before them."""
    return text.partition(" hook error: ")[2] or text


def ran(turns) -> list[str]:
    """The tool results the model got that came from running the call."""
    return [r["text"] for t in turns for r in t.results if not said(r["text"]).startswith("loopwatch")]


def refused(turns) -> list[str]:
    """The tool results the model got that are loopwatch's refusals, in its words."""
    return [said(r["text"]) for t in turns for r in t.results if said(r["text"]).startswith("loopwatch")]


def told(turns) -> bool:
    """Did loopwatch say anything to the model beside a result (its words, not a path
    that happens to hold the name: the test's folder does)?"""
    return any(re.search(r"loopwatch(:| blocked| stopped| refused)", text) for t in turns for text in t.reminders)


@pytest.fixture(params=list(RELEASES))
def release(request) -> str:
    return request.param


# -- one session -------------------------------------------------------------------------------


@pytest.mark.slow
def test_an_unattended_loop_ends_at_the_fourth_call_with_no_model_request_after(tmp_path, release):
    loopwatch = Loopwatch(**UNATTENDED)
    with ScriptedAnthropic(SCRIPTS) as server:
        machine = Machine(tmp_path, server, release)
        messages = asyncio.run(ask(machine, loopwatch, "SCENARIO:loop list the directory"))
        turns = server.of("loop")
    # Four model turns, each asking for the call; none after the 4th, refused before it ran.
    assert [t.answered for t in turns] == ["tool:Bash"] * 4, [t.answered for t in turns]
    assert len(ran(turns)) == 3 and all(text.startswith("Exit code 2") for text in ran(turns))
    assert any("loopwatch: you appear to be going in circles" in text for text in turns[3].reminders)
    (result,) = results(messages)
    assert result.terminal_reason == "hook_stopped" and not result.is_error
    (denied,) = [d["tool_use_id"] for d in result.permission_denials]
    assert said(tool_results(messages)[denied]).startswith(
        f"loopwatch stopped the run: you ran `{LOOP_COMMAND}` 3 times"
    )
    assert "the same Bash call returned the same result 3 times in a row" in loopwatch.stop_reason(result)
    gc.collect()
    assert loopwatch.guard.live_runs == 0  # the ended run's guards are released; its reason is kept


@pytest.mark.slow
def test_an_attended_loop_is_refused_from_the_fourth_call_and_the_model_goes_on(tmp_path, release):
    loopwatch = Loopwatch(**ATTENDED)
    with ScriptedAnthropic(SCRIPTS) as server:
        machine = Machine(tmp_path, server, release)
        messages = asyncio.run(ask(machine, loopwatch, "SCENARIO:loop list the directory"))
        turns = server.of("loop")
    assert [t.answered for t in turns] == ["tool:Bash"] * 12 + ["text"]  # the script ran to its end
    assert len(ran(turns)) == 3
    assert len(refused(turns)) == 9 and all(text.startswith("loopwatch blocked this call") for text in refused(turns))
    (result,) = results(messages)
    assert result.terminal_reason == "completed" and result.result == "Done after 12 tool calls."
    assert loopwatch.stop_reason(result) is None
    assert loopwatch.guard.live_runs == 0  # released at the turn's end (Stop)


@pytest.mark.slow
def test_a_healthy_run_is_left_alone(tmp_path, release):
    loopwatch = Loopwatch(**UNATTENDED)
    with ScriptedAnthropic({}) as server:
        machine = Machine(tmp_path, server, release)
        server.scripts["healthy"] = healthy_script(machine.work)
        messages = asyncio.run(ask(machine, loopwatch, "SCENARIO:healthy write and fix a test"))
        turns = server.of("healthy")
    assert [t.answered for t in turns][-1] == "text" and len(turns) == 14  # 13 calls, then the answer
    assert len(ran(turns)) == 13 and not refused(turns) and not told(turns)
    assert "ok" in ran(turns)[-1]  # the fixed test passes
    assert "return a + b" in (machine.work / "test_calc.py").read_text()
    (result,) = results(messages)
    assert result.result == "Done: the test passes." and loopwatch.stop_reason(result) is None


@pytest.mark.slow
def test_a_reworded_description_is_the_same_call(tmp_path, release):
    loopwatch = Loopwatch(**UNATTENDED)
    with ScriptedAnthropic(SCRIPTS) as server:
        machine = Machine(tmp_path, server, release)
        messages = asyncio.run(ask(machine, loopwatch, "SCENARIO:reworded list the directory"))
        turns = server.of("reworded")
    assert len({t.input["description"] for t in SCRIPTS["reworded"][:4]}) == 4  # each call worded anew
    assert len(turns) == 4 and len(ran(turns)) == 3
    assert results(messages)[-1].terminal_reason == "hook_stopped"


@pytest.mark.slow
def test_without_loopwatch_the_loop_runs_to_the_end(tmp_path):
    """The baseline of the tests above: the same CLI and script, no guard."""
    with ScriptedAnthropic(SCRIPTS) as server:
        machine = Machine(tmp_path, server, "bundled")
        messages = asyncio.run(ask(machine, None, "SCENARIO:loop list the directory"))
        turns = server.of("loop")
    assert len(ran(turns)) == 12 and results(messages)[-1].terminal_reason == "completed"


# -- several sessions, and sub-agents -----------------------------------------------------------


@pytest.mark.slow
def test_one_loopwatch_serves_two_sessions_at_once(tmp_path, release):
    """A looping `query()` and a healthy `ClaudeSDKClient` session at once, through one
    `Loopwatch`: the loop ends as it does alone, the healthy one is untouched."""
    loopwatch = Loopwatch(**UNATTENDED)
    with ScriptedAnthropic(SCRIPTS) as server:
        looping = Machine(tmp_path / "looping", server, release)
        healthy = Machine(tmp_path / "healthy", server, release)
        server.scripts["healthy"] = healthy_script(healthy.work)

        async def chat() -> list:
            async with ClaudeSDKClient(options=healthy.options(loopwatch)) as client:
                await client.query("SCENARIO:healthy write and fix a test")
                return [message async for message in client.receive_response()]

        async def both() -> tuple[list, list]:
            return await asyncio.gather(ask(looping, loopwatch, "SCENARIO:loop list the directory"), chat())

        stopped, finished = asyncio.run(both())
        loop_turns, healthy_turns = server.of("loop"), server.of("healthy")
    assert len(loop_turns) == 4 and len(ran(loop_turns)) == 3
    assert "same Bash call" in loopwatch.stop_reason(results(stopped)[-1])
    assert len(ran(healthy_turns)) == 13 and not refused(healthy_turns) and not told(healthy_turns)
    assert results(finished)[-1].result == "Done: the test passes."
    assert loopwatch.stop_reason(results(finished)[-1]) is None


@pytest.mark.slow
def test_a_looping_sub_agent_is_watched_apart_and_ends_the_unattended_run(tmp_path, release):
    """The main agent runs the failing command twice, then a sub-agent runs it: the
    sub-agent's streak starts at its own first call (3 run, as alone), and its stop
    ends the whole run: no main-agent model request after it."""
    loopwatch = Loopwatch(**UNATTENDED)
    with ScriptedAnthropic({"loop": loop_script(12), "delegating": delegating_script()}) as server:
        machine = Machine(tmp_path, server, release)
        messages = asyncio.run(ask(machine, loopwatch, "SCENARIO:delegating list it, then delegate"))
        main, sub = server.of("delegating"), server.of("loop")
    assert [t.answered for t in main][:3] == ["tool:Bash", "tool:Bash", "tool:Agent"]
    assert len(ran(main[:3])) == 2 and not refused(main)  # the main agent's own calls ran
    assert [t.answered for t in sub] == ["tool:Bash"] * 4  # the sub-agent's 4th was refused, its last turn
    assert len(ran(sub)) == 3 and not refused(sub)
    texts = tool_results(messages)
    assert sum(said(text).startswith("loopwatch stopped the run") for text in texts.values()) == 1
    # A foreground sub-agent (2.1.197): the main agent gets no turn after the Agent call.
    # A background one (2.1.332, 2.1.337): the main agent answered once while it ran;
    # the notification of its end gets no turn.
    background = "Async agent launched" in " ".join(r["text"] for t in main for r in t.results)
    assert len(main) == (4 if background else 3)
    assert results(messages)[-1].terminal_reason in ("hook_stopped", None)
    reason = loopwatch.stop_reason(results(messages)[-1])
    assert reason.startswith("a sub-agent was stopped: the same Bash call returned the same result 3 times")
    assert loopwatch.guard.live_runs == 0


@pytest.mark.slow
def test_an_attended_sub_agent_is_refused_and_its_parent_left_alone(tmp_path, release):
    loopwatch = Loopwatch(**ATTENDED)
    with ScriptedAnthropic(SCRIPTS) as server:
        machine = Machine(tmp_path, server, release)
        messages = asyncio.run(ask(machine, loopwatch, "SCENARIO:subagent delegate the listing"))
        main, sub = server.of("subagent"), server.of("loop")
    assert len(sub) == 13 and len(ran(sub)) == 3 and len(refused(sub)) == 9
    assert not refused(main) and not told(main)
    assert results(messages)[-1].result == "The sub-agent is done."
    assert loopwatch.stop_reason(results(messages)[-1]) is None


# -- without the CLI ---------------------------------------------------------------------------


def test_options_add_the_hooks_after_the_users_own_and_leave_them_alone():
    async def mine(input, tool_use_id, context):
        return {}

    loopwatch = Loopwatch(**UNATTENDED)
    own = ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[mine])]}, max_turns=7)
    guarded = loopwatch.options(own)
    assert list(own.hooks) == ["PreToolUse"] and len(own.hooks["PreToolUse"]) == 1  # the original is unchanged
    assert list(guarded.hooks) == list(HOOK_EVENTS) and guarded.max_turns == 7
    assert guarded.hooks["PreToolUse"][0].hooks == [mine]
    assert len(guarded.hooks["PreToolUse"]) == 2
    again = loopwatch.options(guarded)  # adding them twice adds nothing
    assert {event: len(matchers) for event, matchers in again.hooks.items()} == {
        event: len(matchers) for event, matchers in guarded.hooks.items()
    }
    assert loopwatch.options(cwd="/tmp").cwd == "/tmp" and loopwatch.hooks.keys() == set(HOOK_EVENTS)


def test_a_guard_around_one_monitor_is_refused():
    with pytest.raises(TypeError, match="watches one run"):
        Loopwatch(Guard(Monitor()))
    with pytest.raises(TypeError, match="not both"):
        Loopwatch(Guard(), profile="attended")


def test_an_event_it_cannot_read_is_let_be():
    loopwatch = Loopwatch(**UNATTENDED)
    assert loopwatch.answer({"hook_event_name": "PreToolUse"}) == {}  # no session
    assert loopwatch.answer({"hook_event_name": "PreToolUse", "session_id": "s"}) == {}  # no tool
