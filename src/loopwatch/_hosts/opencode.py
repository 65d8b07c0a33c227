"""What opencode sends and writes, in one place: the hook, the opencode readers and
`install` read its events, calls and files through this module.

opencode (npm `opencode-ai`) runs no hook commands: its guard is a JavaScript plugin,
`opencode_plugin.js` beside this module, which `loopwatch install opencode` writes into a
folder opencode loads plugins from, with the hook's command line in it (JSON). The plugin
runs `python -I -m loopwatch hook opencode EVENT` per event with a payload it builds
(`hook_event_name`, `session_id`, `agent_id`, `tool_name`, `tool_use_id`, `tool_input`,
`tool_response` or `error`, `cwd`) and acts on the JSON answer (`refuse`, `nudge`, `stop`,
`person`).

What opencode 1.17.19 and 1.18.33 were seen to do (real CLI, scripted model; the tests in
tests/test_realclient_opencode.py pin each of these):

- A plugin's `tool.execute.before(input, output)` runs before every call, awaited, user
  plugins first, then a project's (`.opencode/plugin/`), then the managed config's
  (`/etc/opencode/opencode.json`): a throw refuses the call and the model reads exactly
  the error's text as its result; the chain stops there. `tool.execute.after` runs after a
  call that completed, and what it appends to `output.output` is what the model reads.
- A shell command that fails is "completed": its exit code is only in
  `output.metadata.exit` (the model never sees it). A tool that fails by throwing (a read
  of a missing file, an edit that does not apply, a refused call) gets no after-hook at
  all: the plugin reports its error part, seen in `event` (`message.part.updated`,
  `state.status: "error"`), as `tool.error`; its own refusals are never reported so.
- Nothing opencode does with a plugin's answer ends `opencode run`, but a throw in
  `chat.params`, which it calls before every model request (a sub-agent's too), fails
  that request: the session errors with the thrown text, no request is sent, and
  `opencode run` exits 1. Aborting the session races with the next request, and
  aborting a sub-agent only cancels its task; the plugin holds its stop in `chat.params`.
- Sub-agents (the `task` tool) are child sessions: their calls carry only the child's id,
  whose parent is `info.parentID` of its `session.created` event. The plugin sends the
  top-level session as `session_id` and the child as `agent_id`; the task call's after
  payload names the child (`spawned`).
- Nothing in the environment or the payloads says a run is headless; the plugin sees its
  process's argv (`run` without `-i`/`--interactive`: headless; the terminal UI runs
  plugins in a worker whose argv names no command) and says so in the hook's environment
  (`LOOPWATCH_OPENCODE_HEADLESS`); the hook's parent is opencode itself, whose command
  line says the same.
- No trust is asked for a project's plugins, and they run after the user's: they can
  change what runs after the check or take a nudge back out. `OPENCODE_PURE=1` (or
  `--pure`) loads no plugin at all. What a project cannot override is the managed config,
  whose plugins run last (`install --system`). No `.env` file is loaded.
- Sessions are rows of a SQLite database (`$XDG_DATA_HOME/opencode/opencode.db`, tables
  `session`, `message`, `part` with JSON `data`); `opencode export ID` prints one session
  as JSON; `opencode run --format json` prints the main session's parts as JSON lines.

Standard library only, and nothing heavy at import: the hook imports this module.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .base import (
    AFTER,
    ALLOW_REPLY,
    BEFORE,
    CALL_EVENTS,
    FAILED,
    PROMPT,
    SUBAGENT_END,
    TURN_END,
    Call,
    Host,
    Payload,
    PayloadError,
    Reply,
    SettingsError,
    StateFolder,
    SwitchOff,
    read_json,
    text_field,
    trim,
)

if TYPE_CHECKING:
    from pathlib import Path

    from .._core.session import Decision

__all__ = [
    "EVENTS",
    "HEADLESS_ENV",
    "HOST",
    "PLUGIN_NAME",
    "SHELL_TOOLS",
    "loopwatch_refusal",
    "normalised_output",
    "plugin_text",
    "without_nudge",
]

NAME = "opencode"

#: The plugin's events (its own names for what it reports) -> the guard's.
EVENTS: Mapping[str, str] = {
    "tool.execute.before": BEFORE,
    "tool.execute.after": AFTER,
    "tool.error": FAILED,
    "chat.message": PROMPT,
    "session.idle": TURN_END,
}

#: opencode's shell tool.
SHELL_TOOLS = frozenset({"bash"})

#: What the plugin puts in the hook's environment: "1" when the opencode process is
#: `opencode run` (nobody watching), "0" otherwise.
HEADLESS_ENV = "LOOPWATCH_OPENCODE_HEADLESS"

#: The file loopwatch writes into a plugin folder.
PLUGIN_NAME = "loopwatch.js"
#: The plugin's source, shipped beside this module.
PLUGIN_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "opencode_plugin.js")
#: The line of the plugin that holds the hook command (`null` in loopwatch's own copy).
_INSTALLED = re.compile(r"^const INSTALLED = (.*) // loopwatch: hook command$", re.MULTILINE)
#: The managed config file (in `managed_dir`).
MANAGED_CONFIG = "opencode.json"
_MAX_FILE = 1 << 20
#: The first line of every copy: how a plugin file is known as loopwatch's.
_MARK = "// loopwatch's live guard for opencode."

# A long output is cut by opencode and kept whole in a file whose name grows every call
# (`tool_<ascending id>`), named in the text the model reads ("Full output saved to: ...",
# "... full content saved to ..."): identical failures must not differ by that name.
_SAVED_AS = re.compile(r"(saved to:? \S*?)tool_[0-9A-Za-z]{6,40}")


def normalised_output(text: Any) -> Any:
    """A tool's output with the name of the file opencode kept its whole output in (a
    per-call id) replaced by a placeholder; anything else as it is."""
    if not isinstance(text, str) or "saved to" not in text:
        return text
    return _SAVED_AS.sub(r"\1tool_<id>", text)


def without_nudge(text: Any) -> Any:
    """A tool's output as the call gave it: what the plugin appended for the model (a nudge,
    after a blank line) taken off. The database and the run's output keep the text the
    model read; the guard judged the output before the nudge was added."""
    if not isinstance(text, str) or "\n\nloopwatch: " not in text:
        return text
    from .._core.messages import Nudged, StillCircling

    cut = min(
        (at for at in (text.find(f"\n\n{head}") for head in (Nudged.head, StillCircling.head)) if at >= 0),
        default=-1,
    )
    return text if cut < 0 else text[:cut]


def loopwatch_refusal(text: Any) -> bool:
    """Is an error part's text loopwatch's own refusal (the call never ran)?"""
    if not isinstance(text, str):
        return False
    from .._core.messages import loopwatch_said

    return loopwatch_said(text.removeprefix("Error: ")) is not None


def plugin_text(command: list[str] | None) -> str:
    """The plugin file, running `command` (an argv; the event's name is added to it), or
    loopwatch's own copy (`None`: the command comes from the plugin's options)."""
    from .._files import open_file

    with open_file(PLUGIN_SOURCE) as fh:
        source = fh.read().decode("utf-8")
    if command is None:
        return source
    # JSON, ASCII only: a value no text in it can break out of, whatever the path holds.
    literal = json.dumps(command, ensure_ascii=True)
    return _INSTALLED.sub(lambda _: f"const INSTALLED = {literal} // loopwatch: hook command", source, count=1)


def plugin_command(text: Any) -> list[str] | None:
    """The command a plugin file runs, when the file is loopwatch's (its first line and a
    command line written by `plugin_text`); else None."""
    if not isinstance(text, str) or not text.startswith(_MARK):
        return None
    found = _INSTALLED.search(text)
    if found is None:
        return None
    try:
        command = json.loads(found.group(1))
    except ValueError:
        return None
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        return command
    return None


def _argv(command: str) -> list[str]:
    import shlex

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise SettingsError(f"the hook command cannot be read as a command line ({exc})") from None
    if not argv:
        raise SettingsError("the hook command is empty")
    return argv


def _join(argv: list[str]) -> str:
    import shlex

    return shlex.join(argv)


def config_dir(env: Mapping[str, str]) -> str:
    """The user's opencode folder: `$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`."""
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "opencode")


def managed_dir(env: Mapping[str, str]) -> str:
    """The folder of opencode's managed config, which no project overrides: `/etc/opencode`
    (opencode's own `OPENCODE_TEST_MANAGED_CONFIG_DIR` moves it, for tests)."""
    return env.get("OPENCODE_TEST_MANAGED_CONFIG_DIR") or "/etc/opencode"


def data_dir(env: Mapping[str, str]) -> str:
    """Where opencode keeps its sessions: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`."""
    base = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "opencode")


#: A project's plugin folders and config files, from the folder opencode runs in (opencode
#: reads every `.opencode/` up to the repository's root; these are the nearest).
PROJECT_PLUGIN_FOLDERS = (os.path.join(".opencode", "plugin"), os.path.join(".opencode", "plugins"))
PROJECT_CONFIGS = (
    "opencode.json",
    "opencode.jsonc",
    os.path.join(".opencode", "opencode.json"),
    os.path.join(".opencode", "opencode.jsonc"),
)


#: A place opencode loads plugins from (a plugin folder, or a config file: its `plugin` list).
_PLUGIN_PLACES = re.compile(
    r"(?:^|[\s\"'`/\\=:(])(?:\.?opencode[/\\]+plugins?(?=[/\\\s\"'`]|$)|(?:\.opencode[/\\]+)?opencode\.jsonc?\b)"
)
#: The file a line of a patch names (`apply_patch`'s own format).
_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+)$")
#: What a shell command that writes, copies, moves, links or removes a file says.
_WRITES = re.compile(
    r">|\b(?:tee|cp|mv|ln|rm|unlink|install|rsync|dd|truncate|chmod|chown|patch|curl|wget|tar|unzip|"
    r"python3?|node|bun|deno|perl|ruby)\b|\bsed\s+(?:-\w+\s+)*-i|\bgit\s+(?:checkout|restore|apply|am|mv|rm)\b"
)


class Opencode(Host):
    """opencode: the facts of the module's docstring, as the host contract."""

    name = NAME
    title = "opencode"
    binary = "opencode"
    package = "opencode-ai"
    tested = ("1.17.19", "1.18.33")
    events = EVENTS
    hooked_events = tuple(EVENTS)
    scopes = ("user", "project", "system")
    isolated = True
    settings_shape = "files"
    # Its data, state, config and cache folders are all called `opencode`
    # (`$XDG_*_HOME/opencode`, 1.17.19 and 1.18.33): its sessions are the database
    # (`opencode.db`, `opencode-<channel>.db`); beside it, credentials (`auth.json`), logs,
    # whole outputs of cut tool results, git snapshots, the prompt history (what the person
    # typed), settings, plugins and caches, all left out by name.
    state_folders = (
        StateFolder(("opencode.db", "opencode-*.db"), ("opencode.db",), read=("opencode.db", "opencode-*.db")),
        StateFolder(("opencode-*.db",), ("auth.json",), name="opencode", read=("opencode-*.db",)),
        StateFolder((), ("prompt-history.jsonl",), name="opencode"),
        StateFolder((), ("kv.json",), name="opencode"),
        StateFolder((), ("opencode.json",), name="opencode"),
        StateFolder((), ("opencode.jsonc",), name="opencode"),
        StateFolder((), ("models.json",), name="opencode"),
    )
    #: A new plugin file: the user's alone (opencode runs as the user).
    file_mode = 0o600
    # Where opencode loads plugins from, or a list of them: what the agent must not write
    # (`switches_off`, which reads these with the call's tool).
    switch_paths = _PLUGIN_PLACES.pattern

    # -- the live guard ------------------------------------------------------------------------

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        native = event or text_field(raw, "hook_event_name", required=True)
        session = text_field(raw, "session_id", required=True)
        assert native is not None and session is not None
        agent = text_field(raw, "agent_id") or ""
        guard = EVENTS.get(native, native)
        if guard == TURN_END and agent:
            guard = SUBAGENT_END
        calls: tuple[Call, ...] = ()
        if guard in (BEFORE, AFTER, FAILED):
            call = self._call(raw, guard)
            calls = () if call is None else (call,)
        return Payload(NAME, guard, session, agent, text_field(raw, "cwd"), calls, native=native)

    def _call(self, raw: dict[str, Any], event: str) -> Call | None:
        name = raw.get("tool_name")
        if not isinstance(name, str) or not name:
            raise PayloadError(f"{event}: missing tool_name")
        call_id = raw.get("tool_use_id")
        call_id = call_id if isinstance(call_id, str) else None
        tool_input = trim(raw.get("tool_input"))
        if event == BEFORE:
            return Call(name, tool_input, call_id)
        if event == FAILED:
            error = raw.get("error")
            if loopwatch_refusal(error):
                return None  # the guard's own refusal: the call never ran
            return Call(
                name, tool_input, call_id, trim(normalised_output(error)), True, spawned=_failed_task(name, error)
            )
        response = raw.get("tool_response")
        response = response if isinstance(response, dict) else {}
        code = response.get("exit")
        failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
        spawned = raw.get("spawned")
        spawned = spawned if isinstance(spawned, str) and spawned else None
        return Call(name, tool_input, call_id, trim(normalised_output(response.get("output"))), failed, spawned=spawned)

    def reply(self, payload: Payload, decision: Decision, stopped: str | None) -> Reply:
        from .._core.messages import Stopped, Warned
        from .._core.verdict import Action

        verdict = decision.verdict
        event = payload.event
        if event == BEFORE:
            if decision.blocks and decision.message is not None:
                return self.refuse(
                    payload.native, decision.message, stop=decision.action is Action.STOP, person=decision.reason
                )
            return _warn(verdict)
        if event in CALL_EVENTS:
            out: dict[str, Any] = {}
            action = verdict.action
            if action is Action.STOP or stopped is not None:
                why = Stopped(stopped or verdict.description or "").for_person()
                out.update(stop=why, person=why)
            elif action is Action.BLOCK:  # the call ran: worded so by the guard session
                out["person"] = Warned(verdict.description or "").for_person()
            elif action is Action.WARN and verdict.description:
                out["person"] = Warned(verdict.description).for_person()
            if action in (Action.NUDGE, Action.BLOCK) and decision.message:
                out["nudge"] = decision.message
            return Reply(out) if out else ALLOW_REPLY
        return _warn(verdict)  # a prompt, a turn's end: tell the person at most

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        from .._core.messages import Blocked, Stopped

        out: dict[str, Any] = {"refuse": reason}
        if stop:
            out["stop"] = out["person"] = Stopped(person or reason).for_person()
        elif person:
            out["person"] = Blocked(person).for_person()
        return Reply(out)

    def detect_profile(self, env: Mapping[str, str], payload: Payload | None = None) -> tuple[str, str] | None:
        said = env.get(HEADLESS_ENV)
        if said == "1":
            return "unattended", "opencode run"
        if said == "0":
            return "attended", "interactive"
        return None

    def headless(self, argv: list[str]) -> str | None:
        for i, arg in enumerate(argv[:2]):
            if os.path.basename(arg) in ("opencode", "opencode.exe"):
                rest = argv[i + 1 :]
                words = [a for a in rest if not a.startswith("-")]
                if "-i" in rest or "--interactive" in rest:
                    return ""
                if words[:1] == ["run"]:
                    return "opencode run"
                if words[:2] == ["github", "run"]:
                    return "opencode github run"
                return ""
        return None

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        return {
            "hook_event_name": "tool.execute.after",
            "cwd": cwd,
            "session_id": "ses_loopwatchdoctor",
            "agent_id": "",
            "tool_name": "bash",
            "tool_use_id": "call_doctor",
            "tool_input": {"command": "true"},
            "tool_response": {"output": "", "exit": 0, "title": "true"},
        }

    # -- its settings --------------------------------------------------------------------------

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        """The folder `install` writes into: a plugin folder opencode loads every file of
        (the user's, a project's), or the managed config's folder (`system`)."""
        from pathlib import Path  # not at import: the hook never needs it

        if scope == "system":
            return Path(managed_dir(env))
        if scope == "user":
            return Path(config_dir(env)) / "plugin"
        return cwd / ".opencode" / "plugin"

    def read_folder(self, folder: Path) -> dict[str, str]:
        """What `install` edits in `folder`: in a plugin folder, loopwatch's plugin file
        (when there is one); in the managed config's folder, its `opencode.json` ("" when
        there is none yet). {} when the folder does not exist. Raises OSError when a file
        cannot be read; a link is never followed."""
        import stat

        from .._files import open_file

        plugins = folder.name in ("plugin", "plugins")
        name = PLUGIN_NAME if plugins else MANAGED_CONFIG
        path = folder / name
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return {} if plugins else {name: ""}
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path}: not a regular file")
        with open_file(str(path)) as fh:
            data = fh.read(_MAX_FILE + 1)
        if len(data) > _MAX_FILE:
            raise OSError(f"{path}: larger than {_MAX_FILE} bytes")
        return {name: data.decode("utf-8", "replace")}

    def install(self, settings: Any, command: str, scope: str = "user") -> Any:
        out = self.uninstall(settings)
        if MANAGED_CONFIG in out:  # the managed config: an entry naming loopwatch's own copy
            config = _config(out[MANAGED_CONFIG])
            plugins = config.get("plugin", [])
            if not isinstance(plugins, list):
                raise SettingsError(f'{MANAGED_CONFIG}: "plugin" is not a list; fix it by hand first')
            config["plugin"] = [*plugins, [_file_uri(PLUGIN_SOURCE), {"hook": _argv(command)}]]
            out[MANAGED_CONFIG] = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
            return out
        if PLUGIN_NAME in out:
            raise SettingsError(f"{PLUGIN_NAME} is there and is not loopwatch's; move it aside first")
        out[PLUGIN_NAME] = plugin_text(_argv(command))
        return out

    def uninstall(self, settings: Any) -> Any:
        out = dict(settings)
        if plugin_command(out.get(PLUGIN_NAME)) is not None:
            del out[PLUGIN_NAME]
        text = out.get(MANAGED_CONFIG)
        if isinstance(text, str) and text.strip():
            config = _config(text)
            plugins = config.get("plugin")
            if isinstance(plugins, list):
                kept = [p for p in plugins if _entry_command(p) is None]
                if len(kept) != len(plugins):
                    config["plugin"] = kept
                    out[MANAGED_CONFIG] = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
        return out

    def hooked(self, settings: Any) -> dict[str, list[str]]:
        found: list[str] = []
        if isinstance(settings, dict):
            command = plugin_command(settings.get(PLUGIN_NAME))
            if command is not None:
                text = settings[PLUGIN_NAME]
                return {event: [_join(command)] for event in self.hooked_events if f'"{event}"' in text}
            text = settings.get(MANAGED_CONFIG)
            try:
                config = _config(text) if isinstance(text, str) else {}
            except SettingsError:
                config = {}
            plugins = config.get("plugin")
            found = [c for c in (_entry_command(p) for p in plugins) if c] if isinstance(plugins, list) else []
        return {event: list(found) for event in self.hooked_events} if found else {}

    def switches_off(self, call: Call, cwd: str | None) -> str | None:
        """A call that writes where opencode loads plugins from (a plugin folder: a project's
        `.opencode/plugin/`, the user's `~/.config/opencode/plugin/`) or an opencode config
        file (whose `plugin` list loads more): any such write, whatever it holds, since a
        plugin is code and runs after the guard. Judged by the tool: a write or edit of such
        a path, a patch that adds, updates, moves or deletes one, a shell command that names
        one and writes, copies, moves, links or removes anything. Reading them is left alone."""
        value = call.input
        if not isinstance(value, dict):
            return None
        if call.name in ("write", "edit"):
            path = value.get("filePath")
            found = _PLUGIN_PLACES.search(path) if isinstance(path, str) else None
            return path if found and isinstance(path, str) else None
        if call.name == "apply_patch":
            patch = value.get("patchText")
            for line in patch.splitlines() if isinstance(patch, str) else ():
                head = _PATCH_FILE.match(line)
                if head and _PLUGIN_PLACES.search(head.group(1)):
                    return head.group(1).strip()
            return None
        if call.name in SHELL_TOOLS:
            command = value.get("command")
            if not isinstance(command, str) or not _WRITES.search(command):
                return None
            found = _PLUGIN_PLACES.search(command)
            if found is None:
                return None
            words = [w for w in command.split() if _PLUGIN_PLACES.search(w)]
            return words[0].strip("\"'`;&|()") if words else found.group(0).strip()
        return None

    def unguarded(self, argv: list[str], env: Mapping[str, str]) -> str | None:
        if "--pure" in argv[1:]:
            return "--pure loads no plugin, loopwatch's guard included"
        if _pure(env):
            return f"OPENCODE_PURE={env.get('OPENCODE_PURE')} loads no plugin, loopwatch's guard included"
        return None

    def switch_offs(self, cwd: Path, env: Mapping[str, str]) -> list[SwitchOff]:
        found = []
        if _pure(env):
            found.append(
                SwitchOff("OPENCODE_PURE (environment)", "OPENCODE_PURE loads no plugin, loopwatch's guard included")
            )
        for name in PROJECT_PLUGIN_FOLDERS:
            folder = cwd / name
            try:
                plugins = sorted(p.name for p in folder.iterdir() if p.suffix in _PLUGIN_SUFFIXES and not _ours(p))
            except OSError:
                continue
            if plugins:
                found.append(
                    SwitchOff(
                        str(folder),
                        f"this project's plugins ({', '.join(plugins[:5])}) run after loopwatch's guard and can "
                        "change what it checked or take its nudge back",
                    )
                )
        for name in PROJECT_CONFIGS:
            path = cwd / name
            config = read_json(path)
            if isinstance(config, dict) and config.get("plugin"):
                found.append(
                    SwitchOff(
                        str(path),
                        "\"plugin\" loads plugins of this project's, which run after loopwatch's guard and can "
                        "change what it checked",
                    )
                )
        return found


# How opencode 1.18.33 reports a task whose sub-agent errored (1.17.19 completes the task).
_SUBAGENT_FAILED = re.compile(r"\ASubagent failed \(task_id: (ses_[0-9A-Za-z]{1,64})\)")


def _failed_task(tool: str, error: Any) -> str | None:
    """The sub-agent a failed task call ran, when its error names it."""
    if tool != "task" or not isinstance(error, str):
        return None
    found = _SUBAGENT_FAILED.match(error)
    return found.group(1) if found else None


_PLUGIN_SUFFIXES = (".js", ".ts", ".mjs", ".mts")


def _ours(path: Path) -> bool:
    """Is this file loopwatch's own plugin (`install --project` writes one)? Not a link, not
    a folder: those are never taken for loopwatch's."""
    from .._files import open_file

    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open_file(str(path)) as fh:
            return plugin_command(fh.read(_MAX_FILE).decode("utf-8", "replace")) is not None
    except OSError:
        return False


def _pure(env: Mapping[str, str]) -> bool:
    """`OPENCODE_PURE` as opencode reads it ("1" or "true", any case): no plugin is loaded."""
    return env.get("OPENCODE_PURE", "").lower() in ("1", "true")


def _config(text: str) -> dict[str, Any]:
    """The managed opencode.json ({} when empty); SettingsError when it is not a JSON object
    (opencode also reads comments there, which loopwatch does not edit)."""
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except ValueError:
        raise SettingsError(
            f"{MANAGED_CONFIG} is not plain JSON (comments?): add loopwatch's entry by hand, "
            "or remove the comments first"
        ) from None
    if not isinstance(config, dict):
        raise SettingsError(f"{MANAGED_CONFIG} is not a JSON object")
    return config


def _file_uri(path: str) -> str:
    from pathlib import Path

    return Path(path).as_uri()


def _entry_command(entry: Any) -> str | None:
    """The hook command of a managed `plugin` entry that is loopwatch's (its own copy, with
    the command in its options), else None."""
    if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str):
        return None
    if not entry[0].startswith("file:") or not entry[0].endswith("/opencode_plugin.js") or "loopwatch" not in entry[0]:
        return None
    options = entry[1]
    hook = options.get("hook") if isinstance(options, dict) else None
    if isinstance(hook, list) and hook and all(isinstance(a, str) for a in hook):
        return _join(hook)
    return None


def _warn(verdict: Any) -> Reply:
    """Tell the person watching of a warning, else allow in silence."""
    from .._core.messages import Warned
    from .._core.verdict import Action

    if verdict.action is Action.WARN and verdict.description:
        return Reply({"person": Warned(verdict.description).for_person()})
    return ALLOW_REPLY


HOST = Opencode()
