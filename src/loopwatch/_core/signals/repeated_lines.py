"""`repeated_lines`: unstructured output repeating a line, or a cycle of lines.

For agents with no structured events (a CLI's stdout and stderr): each countable line
(see `loopwatch._core.lines`) is digested, and a line or a cycle of up to `max_period` lines
repeated `repeats` times in a row is a loop: the same retry message forever, a
three-line traceback with a moving counter. Progress bars, pytest dots and blank lines
never count.

What a raw console can prove. A line that repeats only once its numbers are masked is
suspicion, not proof: it is how log templates, tables and data look. Evidence: on the
Terminal-Bench recordings of OpenHands (`python bench/consoles.py`), stopping on such lines
would stop 95 of the 110 runs that solved their task, nearly always on the runtime's access log
(`HH:MM:SS - openhands:INFO: ... "POST /execute_action HTTP/1.1" 200 OK`, one per
action). Even lines repeated exactly are data when they come in one burst: on the
mini-swe-agent console logs, a maze's rows in an assertion diff, `> hit wall` /
`> moved` answers to one batch of moves, a wrapped base64 blob, in runs that solved
their task. So a streak is proof, and may end the run, only when
- one of its lines is a retry message (`retrying in 5s`, `attempt 3`): the output
  says itself that it is going round; or
- it spans at least `min_span` seconds and either repeated exactly (numbers and
  all) or is a cycle of two lines or more with a failure in it (`AssertionError:`,
  `FAILED`): the same failing step, again and again, over time.
But one line repeated exactly, alone (a cycle of one line), with no failure or retry in
it, each copy `beat_min` to under `beat_max` seconds after the last, is a heartbeat
(`Waiting for the model to respond...` every 0.8 s): a clock prints it, not the agent's
rounds, and it warns at most, however long it goes on. Grade: judgement. Not a flood
(copies read together, under a quarter of a second apart: still proof over
`min_span`), and faster than any round of an agent, which waits for a model: of the
10,135 rounds of the timed sessions of the shared corpus (mini-swe-agent and ATIF), none
took under a second (6 took 1 s, at mini-swe-agent's one-second resolution; the median
4 s; `python bench/waiting.py`).
A heartbeat slower than that is not told apart by its time. The recordings hold no
heartbeat, so the rule decides no verdict on the consoles or the corpora (`python
bench/consoles.py`, `loopwatch scan --json`).
Anything else warns and nudges, never stops (`can_stop` False), unless
`masked_can_stop` is set: a profile written by `loopwatch calibrate` for an agent
whose healthy runs were measured.

And a streak that is not proof and has no failure in it only warns (its severity
stays under 1), as near-identical calls that succeeded only warn in `echo`: lines
alike once masked that say the work went through, one per step (the access log's
`200 OK`), or one command's output in a burst (a maze's rows). Telling the model to
change course on them is noise: with them nudging, 105 of the 110 solved OpenHands
runs would be nudged, and 2 of the 23 solved console logs; as it is, none (`python
bench/consoles.py`). A flood that goes on is not spared: over `min_span` it
is proof. With a failure in it (the same exception, a moving port) it still nudges.
"""

from __future__ import annotations

from collections import deque
from typing import Annotated, Any

from ..finding import PROOF, SUSPICION, Finding
from ..lines import Line
from ..messages import RepeatedOutput
from ..periodic import TailCycles
from .base import Signal
from .params import Between, Count, Seconds, SignalParams

__all__ = ["RepeatedLines"]


class Params(SignalParams):
    #: Consecutive copies of a line cycle. 8: healthy logs repeat a line a few times
    #: (a retry with backoff, "waiting for server" x3), rarely 8 times in a row.
    repeats: Count = 8
    #: Longest cycle of lines looked for.
    max_period: Annotated[int, Between(1, 16)] = 5
    #: May a cycle alike only once numbers are masked end the run? False: healthy
    #: runs print such cycles all the time (log templates, tables; see the module
    #: docstring), so it warns and nudges only. A calibrated profile may turn it on.
    masked_can_stop: bool = False
    #: Seconds an exact or failing streak must span to be proof. An agent's round
    #: takes a model call (seconds; 8 rounds well over 5 s), while one command's
    #: output comes in a burst (the exact repeats of the console logs above).
    min_span: Annotated[float, Seconds()] = 5.0
    #: Seconds between the copies of one line, each alone, that make it a heartbeat
    #: (`Waiting for the model to respond...` every 0.8 s): waiting, a warning at most.
    #: From `beat_min` (a quarter of a second: slower than a flood or one command's
    #: output, whose lines are read together) to under `beat_max` (a second: faster than
    #: an agent's round, a model call; see the module docstring).
    beat_min: Annotated[float, Seconds()] = 0.25
    beat_max: Annotated[float, Seconds()] = 1.0


class RepeatedLines(Signal[Params]):
    name = "repeated_lines"
    can_block = False

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._tail = TailCycles(params.max_period)
        # The exact digests of the last lines, and how many in a row equalled the one a
        # period before (the period of the masked streak): exact copies in O(1).
        self._exacts: deque[bytes] = deque(maxlen=params.max_period)
        self._exact_run = 0
        self._exact_period = 0
        self._retry: deque[bool] = deque(maxlen=params.max_period)
        self._failure: deque[bool] = deque(maxlen=params.max_period)
        self._times: deque[float] = deque(maxlen=params.max_period * params.repeats + params.max_period)
        self._lines = 0
        self._key: int | None = None
        self._started_at = 0.0
        self.most = 0
        self.most_period = 0
        self.most_exact = 0

    def on_line(self, line: Line, at: float, index: int) -> Finding | None:
        self._lines += 1
        self._times.append(at)
        self._retry.append(line.retry)
        self._failure.append(line.failure)
        period, copies, length = self._tail.push(line.key)
        exacts = self._exacts
        if period and period == self._exact_period and exacts[-period] == line.exact:
            self._exact_run += 1
        elif period and len(exacts) >= period and exacts[-period] == line.exact:
            self._exact_run, self._exact_period = 1, period
        else:
            self._exact_run, self._exact_period = 0, period
        exacts.append(line.exact)
        exact_copies = (self._exact_run + period) // period if period else 1
        if copies > self.most:
            self.most, self.most_period = copies, period
        self.most_exact = max(self.most_exact, exact_copies)
        if copies < 2:
            self._key = None
            return None
        if self._key is None:  # a new streak: its start is still in the window
            self._key = self._lines - length + 1
            self._started_at = self._times[-min(length, len(self._times))]
        started_at = self._started_at
        failure = any(list(self._failure)[-period:])
        proof, how = self._grade(period, copies, exact_copies, failure, at - started_at)
        severity = copies / self.params.repeats
        if not proof and not failure:
            severity = min(severity, 0.99)  # progress or data: a warning at most
        return Finding(
            signal=self.name,
            severity=severity,
            key=self._key,
            message=RepeatedOutput(period, copies, how),
            repeats=copies,
            period=period,
            started_at=started_at,
            at=at,
            started_index=index,
            index=index,
            can_stop=proof,
            grade=PROOF if proof else SUSPICION,  # what may stop is proof; the rest only warns and nudges
            can_block=False,
        )

    def _grade(self, period: int, copies: int, exact_copies: int, failure: bool, span: float) -> tuple[bool, str]:
        """Is this streak proof (may it end a run)? And how it repeats (`RepeatedOutput.how`).
        `failure`: a line of the cycle reads as a failure."""
        params = self.params
        if any(list(self._retry)[-period:]):
            return True, "retry"
        counted = min(copies, params.repeats)
        exact = exact_copies >= counted
        if exact and period == 1 and not failure and self._beating(counted):
            return False, "waiting"
        failing = period > 1 and failure
        if (exact or failing) and span >= params.min_span:
            return True, "exact" if exact else "failing"
        how = "burst" if exact or failing else "masked"
        return params.masked_can_stop, how

    def _beating(self, copies: int) -> bool:
        """Did the last `copies` lines each come alone, `beat_min` to under `beat_max`
        seconds after the one before (a heartbeat: not a flood, not an agent's rounds)?"""
        times = self._times
        if len(times) < copies:
            return False
        low, high = self.params.beat_min, self.params.beat_max
        return all(low <= times[-i] - times[-i - 1] < high for i in range(1, copies))

    def reset(self) -> None:
        self._tail.clear()
        self._exacts.clear()
        self._exact_run = self._exact_period = 0
        self._retry.clear()
        self._failure.clear()
        self._key = None

    def calibration(self) -> dict[str, Any]:
        return {"lines_most": self.most, "lines_period": self.most_period, "lines_exact_most": self.most_exact}
