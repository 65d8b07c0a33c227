"""`ToolCall.tree`: the working folder known the same across rounds turns `unchanged` and
`reverify` into proof; unknown (every recording) leaves them exactly as they were."""

from __future__ import annotations

from typing import Any

import pytest
from core_support import actions, bash, call, feed, only

from loopwatch import Action, Monitor, ToolCall

SAME = "a" * 32  # a folder's digest, as the hook gives it


def with_tree(events: list[ToolCall], trees: Any) -> list[ToolCall]:
    """`events`, each with the tree `trees(i, event)` gives (a constant when not callable)."""
    pick = trees if callable(trees) else (lambda i, e: trees)
    return [e._replace(tree=pick(i, e)) for i, e in enumerate(events)]


def check() -> ToolCall:
    return bash("python3 check.py", "add(2, 3) = -1, expected 5")


def failed_edit(n: int) -> ToolCall:
    # Claude Code's Edit whose old text is not in the file: an edit tried, nothing written
    return call(
        "Edit",
        {"file_path": "calc.py", "old_string": f"return a - b  # {n}", "new_string": "return a + b"},
        f"String to replace not found in file.\nString: return a - b  # {n}",
        error=True,
    )


def landed_edit(n: int) -> ToolCall:
    return call("Edit", {"file_path": "calc.py", "old_string": f"v{n}", "new_string": f"v{n + 1}"}, "ok")


def edit_rounds(n: int, edit=failed_edit) -> list[ToolCall]:
    return [check()] + [x for i in range(n) for x in (edit(i), check())]


# -- unchanged ----------------------------------------------------------------------------------


def test_failed_edits_and_the_same_check_on_an_unchanged_folder_is_proof_and_stops():
    m = only("unchanged")
    verdicts = feed(m, with_tree(edit_rounds(6), SAME))
    checks = verdicts[::2]
    assert actions(checks[:4]) == [Action.ALLOW] * 4  # the rounds of today's threshold, 5
    assert checks[4].action is Action.NUDGE and checks[4].finding.grade == "proof"
    assert checks[4].description == (
        "the same Bash call gave the identical result 5 times, with edits tried between and no file of the "
        "working folder changed over 8s"
    )
    assert "your edits are not landing" in checks[4].message
    assert checks[6].action is Action.STOP and checks[6].signal == "unchanged"
    assert Action.BLOCK not in actions(verdicts)


def test_the_same_rounds_with_the_folder_unknown_count_nothing_as_before():
    # a recording: no tree; a failed edit is no write, so no round at all
    verdicts = feed(only("unchanged"), edit_rounds(8))
    assert set(actions(verdicts)) == {Action.ALLOW}


def test_landed_edits_that_changed_the_folder_nudge_as_before_and_never_stop():
    events = edit_rounds(8, landed_edit)
    changing = with_tree(events, lambda i, e: f"{i:032x}")  # each call sees a new folder
    unknown = events
    for events in (changing, unknown):
        verdicts = feed(only("unchanged"), events)
        assert Action.NUDGE in actions(verdicts)
        assert Action.STOP not in actions(verdicts)
        nudge = next(v for v in verdicts if v.action is Action.NUDGE)
        assert nudge.finding.grade == "suspicion" and "with files written between" in nudge.description
    # the two give the very same verdicts: a changing folder is today's signal
    assert [(v.action, v.index) for v in feed(only("unchanged"), changing)] == [
        (v.action, v.index) for v in feed(only("unchanged"), unknown)
    ]


def test_one_change_of_the_folder_ends_the_proof_of_that_streak():
    events = with_tree(edit_rounds(8), SAME)
    # a shell command changed a file between two runs: no proof for this streak any more
    changed = [*events[:5], bash("sed -i s/a/b/ calc.py", "", tree="b" * 32), *with_tree(events[5:], "b" * 32)]
    verdicts = feed(only("unchanged"), changed)
    assert Action.STOP not in actions(verdicts)


def test_a_write_the_folder_cannot_show_ends_the_proof():
    events = with_tree(edit_rounds(8, landed_edit), SAME)
    # the hook gives None to a write outside the folder: it may have been progress
    events[5] = events[5]._replace(tree=None)
    verdicts = feed(only("unchanged"), events)
    assert Action.STOP not in actions(verdicts)
    nudge = next(v for v in verdicts if v.action is Action.NUDGE)
    assert nudge.finding.grade == "suspicion"


def test_one_unknown_run_of_the_check_ends_the_proof():
    events = with_tree(edit_rounds(8), SAME)
    events[4] = events[4]._replace(tree=None)
    verdicts = feed(only("unchanged"), events)
    assert Action.STOP not in actions(verdicts)


def test_a_failed_edit_repeated_alone_is_not_tried_between_its_own_runs():
    edit = failed_edit(1)
    verdicts = feed(only("unchanged"), with_tree([edit] * 10, SAME))
    assert set(actions(verdicts)) == {Action.ALLOW}


def test_attended_it_only_nudges_blocking_the_check_is_never_the_answer():
    m = only("unchanged", profile="attended")
    verdicts = feed(m, with_tree(edit_rounds(9), SAME))
    assert actions(verdicts).count(Action.NUDGE) == 1
    assert Action.BLOCK not in actions(verdicts) and Action.STOP not in actions(verdicts)


# -- reverify -----------------------------------------------------------------------------------


def done(name: str = "mark_task_complete") -> ToolCall:
    return call(name, {}, "")


def claim_rounds(n: int) -> list[ToolCall]:
    return [x for _ in range(n) for x in (bash("cat /app/result.txt", "42"), bash("curl -s localhost", "ok"), done())]


def test_claims_on_an_unchanged_folder_are_proof_and_stop_after_the_nudge():
    verdicts = feed(only("reverify"), with_tree(claim_rounds(6), SAME))
    claims = verdicts[2::3]
    assert actions(claims) == [Action.ALLOW] * 3 + [Action.NUDGE, Action.STOP, Action.STOP]
    assert claims[3].finding.grade == "proof"
    assert claims[3].description == (
        "the task was declared complete 4 times (mark_task_complete), checked again after each, and no file of "
        "the working folder changed between"
    )
    assert Action.BLOCK not in actions(verdicts)


def test_claims_with_the_folder_unknown_only_nudge_as_before():
    verdicts = feed(only("reverify"), claim_rounds(8))
    assert actions(verdicts).count(Action.NUDGE) == 1 and Action.STOP not in actions(verdicts)


def test_a_folder_changed_between_claims_is_progress_and_starts_the_count_again():
    m = only("reverify")
    verdicts = feed(m, with_tree(claim_rounds(8), lambda i, e: f"{i // 9:032x}"))  # a change every 3 claims
    assert set(actions(verdicts)) == {Action.ALLOW}
    assert m.calibration()["reverify_most"] == 3


def test_one_claim_on_an_unknown_folder_leaves_the_streak_suspicion():
    events = with_tree(claim_rounds(8), SAME)
    events[5] = events[5]._replace(tree=None)  # the 2nd claim
    verdicts = feed(only("reverify"), events)
    assert Action.NUDGE in actions(verdicts) and Action.STOP not in actions(verdicts)


@pytest.mark.parametrize("signal", ["unchanged", "reverify"])
def test_a_monitor_fed_no_tree_decides_as_one_fed_the_same_events_with_none(signal):
    events = edit_rounds(7, landed_edit) + claim_rounds(6)
    a = feed(Monitor(), events)
    b = feed(Monitor(), with_tree(events, None))
    assert [(v.action, v.signal, v.index) for v in a] == [(v.action, v.signal, v.index) for v in b]


def test_every_reader_leaves_the_folder_unknown():
    """Recordings carry no folder state: each bundled fixture read by its reader gives
    tool calls whose `tree` is None (what keeps scans byte-identical)."""
    from pathlib import Path

    from loopwatch._readers import read

    fixtures = Path(__file__).resolve().parent / "fixtures"
    calls = 0
    formats = set()
    for path in sorted(p for p in fixtures.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".traj")):
        try:
            sessions = list(read(str(path)))
        except Exception:  # noqa: BLE001, S112 - a fixture no reader takes (a payload, settings) is no recording
            continue
        for session in sessions:
            for event in session.events:
                if isinstance(event, ToolCall):
                    calls += 1
                    formats.add(session.format)
                    assert event.tree is None, (path, session.format)
    assert calls > 100 and len(formats) >= 5, (calls, formats)
