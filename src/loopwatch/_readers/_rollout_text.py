"""RL rollouts as the trainers dump them: multi-turn chat decoded to text, tool calls inside it.

verl and SkyRL write each rollout's response as one decoded string: the model's turns, the
tool calls it wrote (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`, the Hermes
form Qwen models and verl's tool parser use) and the environment's answers, in the chat
template's text. SkyRL decodes with the special tokens (`<|im_start|>role ... <|im_end|>`);
verl skips them, which leaves the role names at the start of a turn and the tool answers
as `<tool_response>...</tool_response>` blocks. `messages(text)` recovers the turns of
either; `events(messages)` makes core events of them (rLLM's episodes give messages
directly).

An assistant turn's calls are its `<tool_call>` blocks (a block that is not JSON is a call
named `tool_call` with the block as input), or, where there are none and the environment
answers, its last other XML-like action block (`<search>q</search>`, `<sql>...</sql>`: the
tag is the tool's name); `<think>` and `<answer>` are not actions. The answer is the next
user or tool turn: one `<tool_response>` block per call in order, else its whole text.
A rollout records no exit codes, so `error` is never set. `source_ref` is `turn N`, the
0-based index of the assistant turn that made the call (`messages[N]` for message lists).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from .._core.events import Event, ModelText, ToolCall, Turn, UserMessage
from .jsonio import blocks_text, decode_arguments

__all__ = ["events", "messages"]

_CHATML = re.compile(r"<\|im_start\|>(\w+)\n?(.*?)(?:<\|im_end\|>|(?=<\|im_start\|>)|\Z)", re.DOTALL)
_RESPONSE = re.compile(r"<tool_response>\s*(.*?)\s*(?:</tool_response>|\Z)", re.DOTALL)
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_OPEN_TAG = re.compile(r"<([A-Za-z_][\w-]{0,40})>")
_NOT_ACTIONS = frozenset({"think", "answer", "tool_call", "tool_response", "reasoning", "solution"})
# What verl's decoding (special tokens skipped) leaves of the template around a tool answer.
_ROLE_LINE = re.compile(r"^\s*(?:user|assistant|tool)\s*\n", re.IGNORECASE)
_ROLES = ("user", "assistant", "tool")


def messages(text: str) -> list[dict[str, str]]:
    """The turns of a decoded response, `{"role", "content"}` each, the first one the model's."""
    if "<|im_start|>" in text:
        turns: list[dict[str, str]] = []
        start = text.find("<|im_start|>")
        lead = text[:start].replace("<|im_end|>", "").strip()
        if lead:  # the response begins inside the assistant turn the prompt opened
            turns.append({"role": "assistant", "content": lead})
        turns += [{"role": m.group(1), "content": m.group(2).strip()} for m in _CHATML.finditer(text, start)]
        return turns
    turns = []
    at = 0
    for match in _RESPONSE.finditer(text):
        said = _without_role_tail(_ROLE_LINE.sub("", text[at : match.start()])).strip()
        if said or not turns:  # the model's turn, then the answers to it
            turns += [{"role": "assistant", "content": said}, {"role": "tool", "content": ""}]
        turns[-1]["content"] += f"<tool_response>{match.group(1)}</tool_response>"
        at = match.end()
    rest = _ROLE_LINE.sub("", text[at:]).strip()
    if rest or not turns:
        turns.append({"role": "assistant", "content": rest})
    return turns


def events(turns: Iterable[Any], prefix: str = "turn ") -> Iterator[Event]:
    """Core events of a rollout's turns (dicts with `role` and `content`; an assistant
    turn's structured `tool_calls`, OpenAI style, are read too). A turn that is not a
    dict is passed over."""
    pending: list[tuple[str, Any, str]] = []  # (name, input, ref) of calls awaiting their answer
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict):
            continue
        role, content = turn.get("role"), blocks_text(turn.get("content"))
        text = content if isinstance(content, str) else ""
        ref = f"{prefix}{index}" if prefix.endswith(" ") else f"{prefix}[{index}]"
        if role == "assistant":
            yield from _answer(pending, None)
            calls, said = _calls(text)
            for call in turn.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    calls.append((function["name"], decode_arguments(function.get("arguments"))))
            if said.strip():
                yield ModelText(said.strip(), source_ref=ref)
            yield Turn(source_ref=ref)
            pending = [(name, value, ref) for name, value in calls]
            if not pending:
                pending = [(name, value, ref) for name, value in _action(text)]
        elif role in ("user", "tool", "function", "environment", "observation"):
            if pending:
                yield from _answer(pending, text)
                pending = []
            elif role == "user" and text.strip():
                yield UserMessage(source_ref=ref)
    yield from _answer(pending, None)


def _answer(pending: list[tuple[str, Any, str]], text: str | None) -> Iterator[ToolCall]:
    if not pending:
        return
    parts: list[str] = [m.group(1) for m in _RESPONSE.finditer(text)] if text is not None else []
    if text is not None and len(parts) != len(pending) and len(pending) == 1:
        parts = [text]  # one call, answered in plain text (or in several blocks)
    for i, (name, value, ref) in enumerate(pending):
        result = parts[i] if i < len(parts) else None
        yield ToolCall(name, value, result, source_ref=ref)
    pending.clear()


def _calls(text: str) -> tuple[list[tuple[str, Any]], str]:
    """The `<tool_call>` blocks of a turn, and its text without them."""
    calls: list[tuple[str, Any]] = []
    for match in _CALL.finditer(text):
        body = match.group(1)
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            calls.append((value["name"], decode_arguments(value.get("arguments", value.get("parameters")))))
        else:
            calls.append(("tool_call", body))
    return calls, _CALL.sub("", text) if calls else text


def _without_role_tail(text: str) -> str:
    """`text` less a role name left at its end (`...\nuser`, `</tool_call>user`), as the
    template leaves it.
    Plain string work: a pattern anchored at the end rescans the text from every blank."""
    body = text.rstrip()
    lowered = body.lower()
    for role in _ROLES:
        head = body[: -len(role)]
        if lowered.endswith(role) and (not head or head[-1].isspace() or head[-1] == ">"):
            return head.rstrip()
    return text


def _action(text: str) -> list[tuple[str, Any]]:
    """The last action block of a turn with no tool call, as `[(tag, body)]`, or []. Each
    opening tag is matched to the first closing tag of its name after it; a name with no
    closing tag left is not looked for again (so unclosed tags cost one pass each name)."""
    found: tuple[str, str] | None = None
    unclosed: set[str] = set()
    at = 0
    while (opening := _OPEN_TAG.search(text, at)) is not None:
        name = opening.group(1)
        at = opening.end()
        if name in unclosed:
            continue
        end = text.find(f"</{name}>", at)
        if end < 0:
            unclosed.add(name)
            continue
        if name.lower() not in _NOT_ACTIONS:
            found = (name, text[at:end].strip())
        at = end + len(name) + 3
    return [found] if found else []
