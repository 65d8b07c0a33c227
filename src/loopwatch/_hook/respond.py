"""Turning a verdict into what each host reads back: JSON on stdout, stderr, exit code.

What we rely on (Claude Code hooks reference; Codex hooks docs and the output
schemas and parser in openai/codex codex-rs/hooks):

- Claude Code PreToolUse denies a call with exit 0 and
  `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
  "deny", "permissionDecisionReason": ...}}`; the reason is shown to the model.
  `{"continue": false, "stopReason": ...}` is documented for every event, but the
  real CLI (2.1.197) honours it only in a PostToolBatch answer, which is where a stop
  takes effect (see `loopwatch._hosts.claude_code`); it is still sent with a
  PreToolUse deny and after a call, where it is ignored and harmless.
- Codex PreToolUse blocks on exit 2 with the reason on stderr, and only if stderr
  is not empty (an empty one is logged as a failed hook and the call runs). It
  rejects `continue: false` and `stopReason` on PreToolUse as invalid output (the
  call then runs: observed with 0.171.0, even next to a JSON deny), so a stop there
  is a block. Nothing a Codex hook answers ends `codex exec` (PostToolUse's
  `continue: false` only replaces the call's output with `stopReason`, and the model
  is asked again): `loopwatch run -- codex exec --json` is the unattended guard.
- PostToolUse (both) and PostToolUseFailure (Claude Code) take
  `hookSpecificOutput.additionalContext`, added to what the model reads next, and
  `{"decision": "block", "reason": ...}`, which puts the reason in front of the model
  (the call has already run). Both accept `continue: false` with `stopReason`.
- `systemMessage` (any event, both hosts) is shown to the person, not the model.
- Stop and SubagentStop are never answered with `decision: "block"`: there it
  means "do not stop", the opposite of what loopwatch is for.
"""

from __future__ import annotations

from typing import Any

from .._core.messages import Blocked, Stopped, Warned
from .._core.session import Decision
from .._core.verdict import Action, Verdict

__all__ = ["Reply", "refuse", "reply"]


class Reply:
    """What the hook process writes: `stdout` (a JSON object or None), `stderr`, exit code."""

    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, stdout: dict[str, Any] | None = None, stderr: str = "", code: int = 0) -> None:
        self.stdout, self.stderr, self.code = stdout, stderr, code

    def __repr__(self) -> str:
        return f"Reply({self.stdout!r}, {self.stderr!r}, {self.code})"


ALLOW_REPLY = Reply()


def reply(host: str, event: str, decision: Decision, stopped: str | None = None) -> Reply:
    """The reply to one event: `decision` is the guard session's (its `message` for the
    model, its `verdict` for the host's form); `stopped` is the stop's reason once the
    run was stopped."""
    verdict = decision.verdict
    if event == "PreToolUse":
        if decision.blocks and decision.message is not None:
            return refuse(host, decision.message, stop=decision.action is Action.STOP, person=decision.reason)
        return _warn(verdict)
    if event in ("PostToolUse", "PostToolUseFailure", "PostToolBatch"):
        if stopped is not None and verdict.action.rank < Action.STOP.rank:
            # Claude Code ends the run here; Codex only replaces the output with the reason.
            why = Stopped(stopped).for_person()
            return Reply({"continue": False, "stopReason": why, "systemMessage": why})
        return _after_call(event, decision)
    return _warn(verdict)  # UserPromptSubmit, Stop, SubagentStop: tell the person at most


def refuse(host: str, reason: str, stop: bool = False, person: str | None = None) -> Reply:
    """Deny a PreToolUse call with `reason` for the model; `stop` also ends the run
    where the host allows it."""
    if host == "codex":
        return Reply(None, reason + "\n", 2)
    out: dict[str, Any] = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        },
    }
    if person:
        out["systemMessage"] = Blocked(person).for_person()
    if stop:
        out["continue"] = False
        out["stopReason"] = Stopped(person or reason).for_person()
    return Reply(out)


def _after_call(event: str, decision: Decision) -> Reply:
    verdict = decision.verdict
    action = verdict.action
    message = decision.message or ""
    if action is Action.NUDGE:
        return Reply({"hookSpecificOutput": {"hookEventName": event, "additionalContext": message}})
    if action is Action.BLOCK:
        # The call already ran: the guard session words it so (`StillCircling`).
        person = Warned(verdict.description or "").for_person()
        if event == "PostToolUse":
            return Reply({"decision": "block", "reason": message, "systemMessage": person})
        return Reply(
            {"hookSpecificOutput": {"hookEventName": event, "additionalContext": message}, "systemMessage": person}
        )
    if action is Action.STOP:
        why = Stopped(verdict.description or "").for_person()
        return Reply({"continue": False, "stopReason": why, "systemMessage": why})
    return _warn(verdict)


def _warn(verdict: Verdict) -> Reply:
    if verdict.action is Action.WARN and verdict.description:
        return Reply({"systemMessage": Warned(verdict.description).for_person()})
    return ALLOW_REPLY
