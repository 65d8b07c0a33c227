"""`apology`: the model apologises turn after turn; scattered apologies are only flagged."""

from __future__ import annotations

from loopwatch import Action, ModelText, Turn

from core_support import actions, feed, only, severity, strongest


def test_apologies_n_messages_in_a_row_are_a_loop():
    m = only("apology", {"threshold": 3})
    verdicts = feed(
        m,
        [ModelText(t) for t in ("I apologize for the error.", "Sorry, wrong file again.", "My mistake, let me retry.")],
    )
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "apology"
    assert verdicts[-1].finding.repeats == 3


def test_numbered_forms_count():
    m = only("apology", {"threshold": 3})
    verdicts = feed(m, [ModelText(f"Please disregard ({n}) the previous answer.") for n in (1, 2, 3)])
    assert verdicts[-1].action is Action.NUDGE


def test_scattered_apologies_are_only_flagged():
    m = only("apology", {"threshold": 3})
    texts = []
    for i in range(20):
        texts += [
            ModelText("Sorry about that, fixing it."),
            ModelText("Sorry, one more fix."),
            ModelText(f"Now the tests pass for module {chr(97 + i)}."),
        ]
    verdicts = feed(m, texts)
    assert strongest(verdicts) is Action.WARN
    assert severity(m, "apology") < 1.0
    assert m.calibration()["apology_total"] == 40


def test_isolated_apologies_are_not_even_flagged():
    m = only("apology", {"threshold": 3})
    verdicts = feed(m, [ModelText("Sorry, fixing.") if i % 2 else ModelText("Running the tests.") for i in range(20)])
    assert strongest(verdicts) is Action.ALLOW


def test_a_streamed_response_is_one_message():
    m = only("apology", {"threshold": 3})
    events = []
    for _ in range(2):
        events += [ModelText("I apolo", chunk=True), ModelText("gize. Sorry. Sorry again.", chunk=True), Turn()]
    feed(m, events)
    assert m.calibration()["apology_most"] == 2
    assert severity(m, "apology") < 1.0


def test_apology_never_blocks_in_the_attended_profile():
    m = only("apology", {"threshold": 2}, profile="attended")
    verdicts = feed(m, [ModelText("Sorry, again.") for _ in range(10)])
    assert Action.NUDGE in actions(verdicts)
    assert Action.BLOCK not in actions(verdicts)
