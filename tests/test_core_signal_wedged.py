"""`wedged`: a terminal that only echoes what the agent types (`Step.stuck`)."""

from __future__ import annotations

from core_support import actions, call, feed, only

from loopwatch import Action
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
    assert "3 commands in a row were only echoed" in verdicts[2].description


def test_a_command_that_runs_ends_the_streak_and_a_blank_result_does_not():
    m = only("wedged", {"turns": 3})
    ran = terminal("reset", "root@box:/app# reset\nroot@box:/app#\n")
    verdicts = feed(m, [stuck("ls"), stuck("pwd"), ran, stuck("ls"), stuck("pwd")])
    assert Action.NUDGE not in actions(verdicts)
    # the other calls of a multi-call step carry "" (their output came with the last)
    blank = call("bash_command", {"cmd": "date"}, "")
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
