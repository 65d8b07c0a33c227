"""Loop findings for RL rollouts, in process: for filtering groups, never a reward by itself.

    from loopwatch.rollouts import score, loop_fields
    results = score(batch)               # one SessionResult per rollout
    keep = [r for r, res in zip(batch, results) if not res.stopped]

A rollout is a list of chat messages (`{"role", "content"}`, tool calls as OpenAI
`tool_calls` or as `<tool_call>` text, answers as `tool` messages or `<tool_response>`
blocks), a decoded response string (as verl hands a reward function its
`solution_str`), or a dict holding either under `messages`, `response` or `output`. Each
is replayed through a fresh monitor, as `loopwatch scan` replays a file.

For verl: `compute_score` has the signature of verl's custom reward function and returns
a dict whose `score` is the task's reward, unchanged (from verl's `default_compute_score`,
or from the scorer you give `with_loop_fields`), and whose other keys are the loop
findings (`loop_fields`); verl keeps those as `reward_extra_info`, logs them and writes
them into its rollout dumps. The reward is the caller's to change: a penalty on
repetition is known to be gamed (the policy learns to vary the words, not to stop
looping); dropping looping groups, or looking at them, is the use meant here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._analysis.replay import SessionResult, replay
from ._core.config import Config
from ._readers import _rollout_text
from ._readers.base import Session

__all__ = ["compute_score", "loop_fields", "score", "score_one", "with_loop_fields"]

FORMAT = "rollout"


def score_one(rollout: Any, config: Config | None = None, name: str = "0") -> SessionResult:
    """The findings on one rollout (see the module's doc for what a rollout may be).
    Raises TypeError for anything else."""
    turns = _turns(rollout)
    session = Session(
        FORMAT, name, _rollout_text.events(turns, "messages" if not isinstance(rollout, str) else "turn ")
    )
    return replay(session, config if config is not None else Config.make(), path=name)


def score(rollouts: Iterable[Any], config: Config | None = None) -> list[SessionResult]:
    """The findings on each rollout of a batch, in order (each named by its index)."""
    config = config if config is not None else Config.make()
    return [score_one(rollout, config, str(index)) for index, rollout in enumerate(rollouts)]


def loop_fields(result: SessionResult) -> dict[str, int | str]:
    """Flat, always-present fields for one rollout (numbers and one string, so a trainer
    can average them and put them in a table): `loop_stopped` 1 if loopwatch would have
    ended the run, `loop_signal` the signal that would have (else ""), `loop_at_action`
    the action it would have ended at (else 0), `loop_wasted_actions` the actions after
    it, `loop_nudges` the interventions before it (or in all, without a stop), and
    `loop_actions` the actions in the rollout."""
    verdict = result.verdict or {}
    return {
        "loop_stopped": int(result.stopped),
        "loop_signal": str(verdict.get("signal") or ""),
        "loop_at_action": int(verdict.get("at_action") or 0),
        "loop_wasted_actions": int((result.saved or {}).get("actions") or 0),
        "loop_nudges": sum(1 for i in result.interventions if i.get("action") != "stop"),
        "loop_actions": result.actions,
    }


RewardFn = Callable[..., Any]


def with_loop_fields(compute: RewardFn, config: Config | None = None) -> RewardFn:
    """A verl reward function: `compute`'s reward as `score`, unchanged, plus the loop
    fields of `solution_str`. `compute` returns a number or a dict with `score` (verl's
    two forms); the dict's other keys are kept."""
    config = config if config is not None else Config.make()

    def scored(
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        reward = compute(data_source, solution_str, ground_truth, extra_info, **kwargs)
        fields: dict[str, Any] = dict(reward) if isinstance(reward, Mapping) else {"score": reward}
        fields.update(loop_fields(score_one(solution_str, config)))
        return fields

    return scored


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """verl's custom reward function (`custom_reward_function.path` = this module's file,
    `name` = `compute_score`): verl's own `default_compute_score` for the reward, plus
    the loop fields. Needs verl installed (it is imported when first called)."""
    try:
        from verl.utils.reward_score import default_compute_score
    except ImportError as exc:
        raise ImportError(
            "loopwatch.rollouts.compute_score scores with verl's default_compute_score: install verl, "
            "or wrap your own scorer with with_loop_fields(my_score)"
        ) from exc
    scored: dict[str, Any] = with_loop_fields(default_compute_score)(
        data_source, solution_str, ground_truth, extra_info, **kwargs
    )
    return scored


def _turns(rollout: Any) -> list[Any]:
    if isinstance(rollout, str):
        return _rollout_text.messages(rollout)
    if isinstance(rollout, Mapping):
        for key in ("messages", "chat_completions", "response", "output", "solution_str"):
            if key in rollout:
                return _turns(rollout[key])
        raise TypeError("a rollout dict holds its turns under `messages` or its text under `response` or `output`")
    if isinstance(rollout, list):
        return rollout
    raise TypeError(
        f"a rollout is a list of messages, a decoded response string or a dict, not {type(rollout).__name__}"
    )
