"""Built-in calibrations: measured thresholds and evidence rules per transcript format.

Data only (the config layer applies it: `Config.for_source`); the core never reads it.
Each entry is `{"signals": {signal: {param: value}}, "evidence": {"confirm": N,
"second_signal": bool}}` for one reader's format name. A format with no entry gets the
careful defaults: suspicion only nudges.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CALIBRATIONS"]

#: Measured by cross-validation on the shared corpus (692 sessions of these three
#: formats and one ATIF session: 347 hand-labelled, 261 that solved their task):
#:
#:     loopwatch evaluate --labels ../shared/corpus/labels.tsv \
#:         --outcomes ../shared/corpus/MANIFEST.tsv --folds 5 --margin 0
#:
#: Every fold chose `repeat.threshold = 4` (stop on the 5th identical round) and
#: `confirm = 1` (suspicion stops one round past its nudge if no call
#: in between succeeded with something new); `second_signal` was chosen by 3 folds of 5
#: and adds nothing once `confirm = 1`; same_error 6 by 4 folds, 7 by one. Out of fold:
#: recall 76% (47/62), median delay 6, 1 stop before onset, 0 on healthy sessions,
#: 3 of 261 successful sessions stopped (all three by proof, under every setting
#: tried: see BENCHMARKS.md), 5.0% of them nudged. The same figures for each format
#: are in BENCHMARKS.md ("Evidence: out-of-fold figures and harm"); the labelled loops
#: are nearly all SWE-agent ones, so for mini-swe-agent and Terminal-Bench this is
#: measured on outcomes (no stop on a successful session) more than on loops.
#:
#: Round 2 (the same command, each agent of a CodeR session replayed with its own
#: monitor): the same choice on all sessions and in every fold (same_error 7 in one);
#: out of fold recall 76% (47/62), median delay 6, 1 stop before onset, 0 on healthy
#: sessions, 3 of 261 successful sessions stopped (one by its own agent, two by a
#: CodeR sub-agent; two of the three after the session's last file change), 3.4% of
#: them nudged (was 5.0%: streaks no longer run across two sub-agents). Screened and
#: not adopted: echo 2 or 4, cycle 3, stagnation 10 (no loop more without harm). A
#: proof streak stopping without its nudge round (with repeat 5) gained one loop and
#: took two nudges off successful sessions out of fold, no harm more; not shipped yet
#: (it needs an `[evidence]` key): BENCHMARKS.md "Evidence, round 2".
#:
#: Round 3 (the same command; `cycle` also sees cycles whose rounds shift, as
#: suspicion, with its default `drift = 0.8`, not tuned): the same choice on all
#: sessions and in every fold (same_error 7 in one); out of fold recall 81% (50/62),
#: median delay 6, 1 stop before onset, 0 on healthy sessions, the same 3 of 261
#: successful sessions stopped, the same 9 of them nudged (3.4%):
#: BENCHMARKS.md "Evidence, round 3".
#:
#: Round 4 (the same command; `repeat` counts near copies as suspicion, and suspicion
#: circling on right after an unheeded nudge, nothing new succeeding since, is one round
#: past it): the same choice in every fold (same_error 7 in one); out of fold recall 81%
#: (50/62), median delay 6, looping steps saved 56.2% -> 57.3%, 1 stop before onset, 0 on
#: healthy sessions, the same 3 of 261 successful sessions stopped and the same 9 nudged:
#: BENCHMARKS.md "Evidence, round 4" (with where the delay comes from).
#:
#: Round 5 (no change; `--folds-by agent`: each agent scored on a setting chosen on the
#: other eight): 8 of 9 held-out agents get this setting (doubao same_error 8, a tie on
#: the others); recall 79% (49/62), the same 3 stops on successful sessions, 1 before
#: onset, 0 on healthy sessions. Seeds 0 to 4 of the 5 folds: recall 81-82%, the same
#: harm: BENCHMARKS.md "Evidence, round 5".
_MEASURED: dict[str, Any] = {
    "signals": {"repeat": {"threshold": 4}, "same_error": {"threshold": 6}},
    "evidence": {"confirm": 1, "second_signal": False},
}

CALIBRATIONS: dict[str, dict[str, Any]] = {
    "swe-agent": _MEASURED,  # SWE-agent 0.x and CodeR .traj
    "mini-swe-agent": _MEASURED,  # mini-swe-agent .traj.json (gemini-3-pro on SWE-bench Verified)
    "tb-console": _MEASURED,  # Terminal-Bench 1 console logs of mini-swe-agent
}
