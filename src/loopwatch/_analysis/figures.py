"""The calibration figures in words: for each figure a signal keeps for choosing its
thresholds (`Signal.calibration`: `repeat_most`, `churn_fewest_distinct`, ...), its
name and what it means, as `calibrate`, `status` and the report show them.

Defined here once, beside the replay that produces the figures; a figure a signal
reports without words here fails `tests/test_cli_vocabulary.py`. What the figures are
is the signals' own business: this only words them.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["FIGURES", "Figure", "figure"]


class Figure(NamedTuple):
    """A figure's name, in words, and what it measures over one session."""

    name: str
    meaning: str


FIGURES: dict[str, Figure] = {
    "repeat_most": Figure(
        "same call, same result", "the most times in a row one call returned the same result (repeat)"
    ),
    "cycle_most": Figure("cycle rounds", "the most rounds in a row of one cycle of actions (cycle)"),
    "cycle_period": Figure("cycle length", "the number of actions in the cycle of the most rounds (cycle)"),
    "stagnation_actions": Figure(
        "replayed actions", "the longest stretch of actions the run had already done, with no new one (stagnation)"
    ),
    "stagnation_seconds": Figure(
        "replayed seconds", "the longest stretch of actions already done, in seconds (stagnation)"
    ),
    "same_error_most": Figure(
        "same error", "the most times one error came back, from calls that differ, with no file written (same_error)"
    ),
    "correction_most": Figure("same correction", "the most times the harness gave one correction (correction)"),
    "correction_most_in_row": Figure(
        "corrections in a row", "the most times in a row the harness gave one correction (correction)"
    ),
    "apology_most": Figure("apologies in a row", "the most model messages in a row that apologised (apology)"),
    "apology_total": Figure("apologies", "the model messages that apologised, in all (apology)"),
    "chanting_most": Figure(
        "repeated passage", "the most times one passage (or cycle of passages) came in one response (chanting)"
    ),
    "churn_fewest_distinct": Figure(
        "fewest distinct calls",
        "the fewest distinct calls in any churn window of calls with no file written (churn: a healthy session "
        "shows more)",
    ),
    "lines_most": Figure(
        "repeated output", "the most copies in a row of one output line cycle, numbers masked (repeated_lines)"
    ),
    "lines_period": Figure(
        "output cycle length", "the number of lines in the output cycle of the most copies (repeated_lines)"
    ),
    "lines_exact_most": Figure(
        "repeated output, exact", "the most copies in a row of one output line cycle, numbers and all (repeated_lines)"
    ),
    "retry_longest": Figure("provider retries", "the longest streak of provider retries with no answer (retry_storm)"),
    "wedged_most": Figure(
        "echoed commands", "the most commands in a row only echoed by the terminal, none run (wedged)"
    ),
    "text_only_most": Figure(
        "text-only answers", "the most prompts in a row answered with text and no tool call (text_only)"
    ),
    "unchanged_most": Figure(
        "unchanged check", "the most times one check gave the identical result with files written between (unchanged)"
    ),
    "reverify_most": Figure(
        "task declared complete", "the most times the task was declared complete, checked again between (reverify)"
    ),
}


def figure(key: str) -> Figure:
    """The words for `key`; a figure of a signal of your own (`loopwatch.extend`) has
    none here, and is shown by its key."""
    return FIGURES.get(key) or Figure(key, "a figure of a signal registered outside loopwatch")
