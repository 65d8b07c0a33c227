"""`wedged`: a terminal that runs nothing the agent types (`Step.stuck`): only echoes,
or nothing at all from commands that always print."""

from __future__ import annotations

from core_support import actions, call, feed, only

from loopwatch import Action, ModelText, UserMessage
from loopwatch._core.step import make_step

SCREEN = "Previous response had warnings:\nWARNINGS: extra text\n\nNew Terminal Output:\n\n"


def terminal(command: str, screen: str):
    return call("bash_command", {"cmd": command}, SCREEN + screen)


def stuck(command: str):
    return terminal(command, f"> {command}\n>\n")


def is_stuck(command: str, result: str) -> bool:
    return make_step(1, "bash_command", {"cmd": command}, result, False, (), 0.0).stuck


def test_a_continuation_prompt_or_a_bare_echo_is_stuck():
    assert is_stuck("ls", SCREEN + "> ls\n>\n")
    assert is_stuck("", SCREEN + ">\n>\n")
    assert is_stuck("ps aux", SCREEN + "ps aux\n")  # echoed, no prompt came back: a program holds the shell
    assert is_stuck("ls", "> ls\n>")  # no harness notes: the screen is the whole result


def test_a_command_that_ran_is_not_stuck():
    assert not is_stuck("ls", SCREEN + "root@box:/app# ls\na.py  b.py\nroot@box:/app#\n")
    assert not is_stuck("ls", SCREEN + "> ls\na.py\n>\n")  # output of its own
    assert not is_stuck("cat <<EOF", SCREEN + "> line\n> EOF\nroot@box:/app#\n")  # the heredoc closed
    assert not is_stuck("python3", SCREEN + ">>> x = 1\n>>>\n")  # a REPL prompt is a prompt, not a wedge
    assert not is_stuck("echo hi", "echo hi")  # a bare echo off a terminal screen proves nothing
    assert not is_stuck("ls", "")


def test_three_echoed_commands_in_a_row_nudge():
    m = only("wedged", {"turns": 3})
    verdicts = feed(m, [stuck(c) for c in ("ls", "pwd", "C-c", "date")])
    assert actions(verdicts)[:2] == [Action.ALLOW, Action.WARN]  # two: a warning only
    assert verdicts[2].action is Action.NUDGE
    assert verdicts[2].signal == "wedged"
    assert "3 commands in a row got back only their echo or nothing at all" in verdicts[2].description


def test_a_command_that_runs_ends_the_streak_and_a_blank_result_does_not():
    m = only("wedged", {"turns": 3})
    ran = terminal("reset", "root@box:/app# reset\nroot@box:/app#\n")
    verdicts = feed(m, [stuck("ls"), stuck("pwd"), ran, stuck("ls"), stuck("pwd")])
    assert Action.NUDGE not in actions(verdicts)
    # a command with nothing to show (`cd`) comes back empty in a working shell too
    blank = call("bash_command", {"cmd": "cd /app"}, "")
    verdicts = feed(only("wedged", {"turns": 3}), [stuck("ls"), blank, stuck("pwd"), blank, stuck("id")])
    assert verdicts[-1].action is Action.NUDGE


def test_it_is_a_suspicion_that_needs_corroboration_to_stop():
    m = only("wedged", {"turns": 3})
    verdicts = feed(m, [stuck(f"cmd{i}") for i in range(12)])
    assert Action.STOP not in actions(verdicts)  # no calibration: suspicion only nudges


def test_a_swallowed_command_is_no_progress_so_the_streak_is_corroborated_by_rounds():
    # each echo differs (the agent types something new each time), but nothing ran: a
    # new text that is only the echo of what was typed must not reset the rounds held
    # past the nudge
    m = only("wedged", {"turns": 3}, evidence={"confirm": 4})
    typed = ("ls", "pwd", "date", "whoami", "uptime", "hostname", "env", "true")
    got = actions(feed(m, [stuck(command) for command in typed]))
    assert got[2] is Action.NUDGE
    assert got[3:6] == [Action.ALLOW] * 3
    assert got[6] is Action.STOP


def shell(command: str, result: object = None, **kw: object):
    """An OpenHands-style shell call: each call carries its own output (None: nothing)."""
    return call("execute_bash", {"command": command}, result, **kw)


def test_nothing_back_from_a_command_that_always_prints_is_stuck():
    assert make_step(1, "execute_bash", {"command": "bash -lc 'echo DONE'"}, None, False, (), 0.0).stuck
    assert make_step(1, "execute_bash", {"command": "C-c"}, "", False, (), 0.0).stuck
    assert make_step(1, "execute_bash", {"command": "ps aux | head -n 20"}, None, False, (), 0.0).stuck
    # a command with nothing to show, or whose output went elsewhere, may be silent
    assert not make_step(1, "execute_bash", {"command": "mkdir -p /app/x"}, None, False, (), 0.0).stuck
    assert not make_step(1, "execute_bash", {"command": "echo hi > /app/x"}, None, False, (), 0.0).stuck
    # an error flag says it ran (and failed); any output says it ran
    assert not make_step(1, "execute_bash", {"command": "ls -la /app"}, None, True, (), 0.0).stuck
    assert not make_step(1, "execute_bash", {"command": "ls -la /app"}, "total 0", False, (), 0.0).stuck
    # an unknown input (lost by the source) proves nothing
    assert not make_step(1, "execute_bash", {"cmd": None, "unknown_input": "s#1#0"}, None, False, (), 0.0).stuck


def test_three_silent_probes_in_a_row_nudge_and_silent_setup_commands_neither_count_nor_break():
    held = [
        shell("bash -lc 'echo DONE'"),
        shell("mkdir -p /tmp/x"),
        shell("C-c"),
        shell("cd /app"),
        shell("ls -la /app"),
    ]
    verdicts = feed(only("wedged", {"turns": 3}), held)
    assert actions(verdicts) == [Action.ALLOW, Action.ALLOW, Action.WARN, Action.ALLOW, Action.NUDGE]
    assert "3 commands in a row got back only their echo or nothing at all" in verdicts[-1].description
    ran = shell("ls -la /app", "total 8\ndrwxr-xr-x 2 root root 4096 .")
    verdicts = feed(only("wedged", {"turns": 3}), [shell("echo DONE"), shell("C-c"), ran, shell("pwd")])
    assert Action.NUDGE not in actions(verdicts)  # the shell answered: the streak starts again


def test_calls_of_one_moment_are_one_round():
    # a terminal harness sends several keystrokes and reads one screen for them all: in
    # its recordings every call of the batch but the last carries an empty result
    batch = [call("bash_command", {"cmd": c}, "", at=5.0) for c in ("echo a", "ls -la", "pwd", "C-c")]
    assert all(v.action is Action.ALLOW for v in feed(only("wedged", {"turns": 3}), batch))
    spread = [call("bash_command", {"cmd": c}, "", at=5.0 + i) for i, c in enumerate(("echo a", "ls -la", "pwd"))]
    assert feed(only("wedged", {"turns": 3}), spread)[-1].action is Action.NUDGE


def test_a_user_message_does_not_free_a_held_terminal():
    prompt = [ModelText("The task is complete."), UserMessage()]
    events = [shell("echo DONE"), shell("C-c"), *prompt, shell("ps aux"), *prompt, shell("echo DONE"), shell("C-c")]
    got = actions(feed(only("wedged", {"turns": 3}), events))
    assert got.count(Action.NUDGE) == 1  # nudged once: the streak, and its rung, outlast the prompts
    assert got[4] is Action.NUDGE
    # held rounds past the nudge are kept across a prompt too: corroborated, it stops
    m = only("wedged", {"turns": 3}, evidence={"confirm": 2})
    got = actions(feed(m, [shell("echo DONE"), shell("C-c"), shell("pwd"), shell("C-c"), *prompt, shell("id")]))
    assert got[2] is Action.NUDGE and got[-1] is Action.STOP
