"""Plain chat-message lists, OpenAI, Anthropic or Gemini style.

Accepted shapes: a top-level JSON list of messages, or an object with the list under
`messages` (other keys are ignored). Messages are `{"role", "content", ...}`:
- OpenAI: an assistant message's `tool_calls` (`{"id", "function": {"name",
  "arguments"}}`, arguments a JSON string) answered by `{"role": "tool",
  "tool_call_id", "content"}` messages; the legacy `function_call` answered by a
  `{"role": "function", "name"}` message;
- Anthropic: `tool_use` content blocks (`id`, `name`, `input`) in assistant messages
  answered by `tool_result` blocks (`tool_use_id`, `content`, `is_error`) in user
  messages;
- Gemini (the API's `contents`: what Gemini CLI sends, and what its `/chat save`
  checkpoints hold): `{"role": "user" | "model", "parts": [...]}`, a model's
  `functionCall` parts (`name`, `args`, `id` when the caller sets one) answered by
  `functionResponse` parts (`name`, `response`, the same `id`; without ids, the oldest
  open call of that name). A response with `error` is a failure, and so is a shell
  command whose output states a non-zero exit code in Gemini CLI's words
  (`loopwatch._hosts.gemini_cli`); model parts marked `thought` are not its text.

`source_ref` is `messages[i]` for the object form and `[i]` for a bare list: the
0-based index of the **assistant message that made the call** (where the model
asked), for tool calls as for text.

Events: `ToolCall` when a call's result arrives (emitted then; `error` from the
result's `is_error`, or a tool message's `is_error` / `status: "error"`; plain chat
records no exit codes, so a failure written only in the text is not seen);
`ModelText` for assistant text; `Turn` after each assistant message (with its tokens
when the message carries `usage`); `UserMessage` for user messages that say
something (not those that only return tool results). System and developer messages
yield nothing. Times come from a message's `timestamp` or `created_at` when present.

A call whose result never came is emitted at the end with `result=None`. Not handled:
JSON Lines of messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import Event, ModelText, ToolCall, Turn, UserMessage
from .._hosts import cline  # its session files hold a `messages` list too
from ._common import iso_seconds, load_json
from .base import ReadError, Session
from .jsonio import blocks_text, decode_arguments, head_objects, keys_at, kind_of, session_name, tokens_of

__all__ = ["NAME", "read", "sniff"]

NAME = "chat"

_ROLES = frozenset({"system", "developer", "user", "assistant", "model", "tool", "function"})
#: top-level keys of other formats that also hold messages (mini-swe-agent, SWE-agent, ATIF, OpenHands)
_FOREIGN = frozenset({"trajectory_format", "trajectory", "schema_version", "steps", "history", "environment"})
_USAGE = (
    "prompt_tokens",
    "completion_tokens",
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def sniff(path: str, head: bytes) -> bool:
    text = head.lstrip()
    if b'"role"' not in text:
        return False
    if len(head_objects(text, 2)) > 1:
        return False  # JSON Lines (the core's events, a stream): not one document
    if text.startswith(b"["):
        keys = keys_at(text, 2, limit=60)
        return "role" in keys and not {"action", "observation", "source"} & set(keys)
    if not text.startswith(b"{"):
        return False
    if b'"messages"' not in text:
        return False
    top = keys_at(text, 1)
    if "messages" not in top or _FOREIGN & set(top) or cline.SESSION_KEYS <= set(top):
        return False
    # Not a mini-swe-agent trajectory whose format key lies past the head, nor an opencode export.
    if "info" in top and (b'"mini_version"' in text or b'"exit_status"' in text):
        return False
    from .opencode import is_export

    return not is_export(text)


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The conversation in a chat-message list. Raises ReadError when the file is not one."""
    data = load_json(path, stream)
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        messages, prefix = data["messages"], "messages"
        name = data.get("id") or data.get("session_id") or data.get("conversation_id")
    elif isinstance(data, list):
        messages, prefix, name = data, "", None
    else:
        raise ReadError("not a chat-message list (expected a list of messages, or an object with one under `messages`)")
    if messages and not any(isinstance(m, dict) and kind_of(m, "role") in _ROLES for m in messages[:20]):
        raise ReadError("not a chat-message list: no message has a role (system, user, assistant, tool)")
    session = Session(NAME, str(name) if name else session_name(path), ())
    session.events = _events(messages, prefix, session)
    yield session


class _Call:
    __slots__ = ("input", "name", "ref", "tokens")

    def __init__(self, name: str, input: Any, ref: str, tokens: int | None) -> None:
        self.name, self.input, self.ref, self.tokens = name, input, ref, tokens


def _events(messages: list[Any], prefix: str, session: Session) -> Iterator[Event]:
    calls: dict[str, _Call] = {}
    for index, message in enumerate(messages):
        ref = f"{prefix}[{index}]"
        if not isinstance(message, dict):
            session.skipped.append(f"{ref}: not a message object")
            continue
        role = kind_of(message, "role")
        at = iso_seconds(message.get("timestamp", message.get("created_at")))
        content = message.get("content")
        if role == "assistant" or role == "model":
            yield from _assistant(message, index, ref, at, calls, session)
        elif role == "user":
            said = isinstance(content, str) and bool(content.strip())
            for part in message.get("parts") or () if isinstance(message.get("parts"), list) else ():
                if not isinstance(part, dict):
                    continue
                if isinstance(part.get("functionResponse"), dict):
                    done = _function_response(part["functionResponse"], calls, at)
                    if done is not None:
                        yield done
                elif isinstance(part.get("text"), str) and part["text"].strip():
                    said = True
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict):
                    continue
                if kind_of(block) == "tool_result":
                    use_id = block.get("tool_use_id")
                    call = calls.pop(use_id, None) if isinstance(use_id, str) else None
                    if call is not None:
                        yield _complete(
                            call,
                            block.get("tool_use_id"),
                            blocks_text(block.get("content")),
                            block.get("is_error") is True,
                            at,
                        )
                elif kind_of(block) in ("text", "image", "document", "input_text"):
                    said = True
            if said:
                yield UserMessage(at=at, source_ref=ref)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            call = calls.pop(call_id, None) if isinstance(call_id, str) else None
            if call is not None:
                error = message.get("is_error") is True or message.get("status") == "error"
                yield _complete(call, call_id, blocks_text(content), error, at)
        elif role == "function":  # legacy: answers the latest function_call of that name
            key = next(
                (k for k in reversed(calls) if k.startswith("function_call ") and calls[k].name == message.get("name")),
                None,
            )
            if key is not None:
                yield _complete(calls.pop(key), None, blocks_text(content), False, at)
    for call_id, call in calls.items():
        unnamed = call_id.startswith(("function_call ", _UNNAMED))
        yield _complete(call, None if unnamed else call_id, None, False, None)


def _assistant(
    message: dict[str, Any], index: int, ref: str, at: float | None, calls: dict[str, _Call], session: Session
) -> Iterator[Event]:
    tokens = tokens_of(message.get("usage"), *_USAGE)
    if tokens is not None:
        session.tokens = (session.tokens or 0) + tokens
    charged = False  # the message's tokens ride on its first call

    def price() -> int | None:
        nonlocal charged
        if tokens is None:
            return None
        taken, charged = (0 if charged else tokens), True
        return taken

    content = message.get("content")
    texts = [content] if isinstance(content, str) else []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if kind_of(block) in ("text", "output_text") and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind_of(block) == "tool_use" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
            calls[block["id"]] = _Call(block["name"], block.get("input"), ref, price())
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(call.get("id"), str) and isinstance(function.get("name"), str):
            calls[call["id"]] = _Call(function["name"], decode_arguments(function.get("arguments")), ref, price())
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
        calls[f"function_call {index}"] = _Call(legacy["name"], decode_arguments(legacy.get("arguments")), ref, price())
    for j, part in enumerate(message.get("parts") or () if isinstance(message.get("parts"), list) else ()):
        if not isinstance(part, dict):
            continue
        function = part.get("functionCall")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            given = function.get("id")
            key = given if isinstance(given, str) else f"{_UNNAMED}{index}:{j}"
            calls[key] = _Call(function["name"], function.get("args"), ref, price())
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    text = "\n".join(t for t in texts if t.strip())
    if text:
        yield ModelText(text, at=at, source_ref=ref)
    yield Turn(at=at, tokens=tokens, source_ref=ref)


#: The key of a Gemini `functionCall` that has no id (its message and part index).
_UNNAMED = "functionCall "


def _function_response(answer: dict[str, Any], calls: dict[str, _Call], at: float | None) -> ToolCall | None:
    """The call a Gemini `functionResponse` part answers, completed: by its `id`, else the
    oldest open call of its `name` that had no id either."""
    call_id = answer.get("id")
    key: str | None = call_id if isinstance(call_id, str) and call_id in calls else None
    if key is None:
        key = next((k for k, c in calls.items() if k.startswith(_UNNAMED) and c.name == answer.get("name")), None)
    if key is None:
        return None
    call = calls.pop(key)
    from .._hosts.gemini_cli import call_result

    text, failed, _ = call_result(call.name, answer.get("response"))
    return _complete(call, None if key.startswith(_UNNAMED) else key, text, failed, at)


def _complete(call: _Call, call_id: str | None, result: Any, error: bool, at: float | None) -> ToolCall:
    return ToolCall(
        call.name, call.input, result, error=error, at=at, call_id=call_id, source_ref=call.ref, tokens=call.tokens
    )
