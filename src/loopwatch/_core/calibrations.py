"""Built-in calibrations: measured thresholds and evidence rules per transcript format.

Data only (the config layer applies it: `Config.for_source`); the core never reads it.
Each entry is `{"signals": {signal: {param: value}}, "evidence": {"confirm": N,
"second_signal": bool}}` for one reader's format name. A format with no entry gets the
careful defaults: suspicion only nudges.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CALIBRATIONS"]

#: Chosen by cross-validation on the shared corpus (692 sessions of these three
#: formats and one ATIF session: 347 hand-labelled, 261 that solved their task):
#:
#:     loopwatch evaluate --labels ../shared/corpus/labels.tsv \
#:         --outcomes ../shared/corpus/MANIFEST.tsv --folds 5 --margin 0
#:
#: Every fold chooses `repeat.threshold = 4` (stop on the 5th identical round) and
#: `confirm = 1` (suspicion stops one round past its nudge if no call in between
#: succeeded with something new); same_error 6 (7 in one fold); `second_signal` adds
#: nothing once `confirm = 1`. Out of fold: recall 81% (50/62), median delay 6, 1 stop
#: before onset, 0 on healthy sessions, 3 of 261 successful sessions stopped (all three
#: by proof, under every setting of the grid), 9 of them nudged. Other seeds of the folds
#: give 81-82% with the same harm, and with one agent held out at a time (`--folds-by
#: agent`) 8 of 9 agents get this setting (doubao same_error 8) with the same harm. With
#: `--margin 1` no setting is one grid step clear of harm and the folds fall back to the
#: careful one (50% recall): repeat 4 rests on the protocol's 5 rounds, not on the sample.
#: The labelled loops are nearly all SWE-agent ones, so for mini-swe-agent and
#: Terminal-Bench this rests on outcomes (no stop on a successful session) more than on
#: loops. BENCHMARKS.md, "Detection on the 2024 corpus" (per format and per signal: its
#: Archive).
_MEASURED: dict[str, Any] = {
    "signals": {"repeat": {"threshold": 4}, "same_error": {"threshold": 6}},
    "evidence": {"confirm": 1, "second_signal": False},
}

CALIBRATIONS: dict[str, dict[str, Any]] = {
    "swe-agent": _MEASURED,  # SWE-agent 0.x and CodeR .traj
    "mini-swe-agent": _MEASURED,  # mini-swe-agent .traj.json (gemini-3-pro on SWE-bench Verified)
    "tb-console": _MEASURED,  # Terminal-Bench 1 console logs of mini-swe-agent
}
