"""The host contract: everything loopwatch must know of one agent CLI to guard it live.

Each agent CLI is one module of this package (`claude_code`, `codex`, ...) defining
`HOST`, an instance of a `Host` subclass:

- **its payloads** (`parse`): one hook event in the host's words, made a `Payload` in the
  guard's words (`BEFORE`, `AFTER`, ...), with the calls it reports (`Call`);
- **its answers** (`reply`, `refuse`): a decision of the guard made what the host reads
  back (`Reply`: JSON on stdout, stderr, exit status);
- **its runs** (`headless`, `end_run`): how a run that nobody watches is told from one a
  person watches, and, where the host ignores every stop answer, how such a run is ended;
- **its settings** (`settings_file`, `install`, `uninstall`, `hooked`, `switch_offs`,
  `switches_off`, `held`, `keep_on`): where the hook goes, how it is written, what a
  project can write to switch it off, and what holds it on whatever a project says. Most hosts read one JSON settings file (`JsonHooks`); a host that runs
  hook files of their own, one per event, in a folder it lists (Cline) is a `FileHooks`:
  there the "settings" are the folder's hook files, and loopwatch's are files it owns
  whole.

The hook (`loopwatch._hook`), `install`, `uninstall`, `doctor` and `status` are written
once over this contract, and every decision is taken by one state machine
(`_core.session.GuardSession`, driven by `_hook.guard`): a new host is one module and its
tests, registered in `HOSTS` (`loopwatch._hosts`).

What this deliberately does not hold: detection (the core's), recorded sessions (the
readers', which may use a host module's facts), and anything that needs more than the
standard library (the hook imports this module and one host module on every call).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path

    from .._core.session import Decision

__all__ = [
    "AFTER",
    "BATCH",
    "BEFORE",
    "FAILED",
    "GUARD_EVENTS",
    "PROMPT",
    "RESUME",
    "SUBAGENT_END",
    "SUPERVISED",
    "TURN_END",
    "Call",
    "FileHooks",
    "Host",
    "JsonHooks",
    "Payload",
    "PayloadError",
    "Reply",
    "StateFolder",
    "SwitchOff",
    "ancestors",
    "process_environ",
    "text_field",
    "trim",
]

# -- the guard's events -----------------------------------------------------------------------
# What `_hook.guard` feeds the session's monitor. Spelled as Claude Code spells its events,
# the first host: the state keeps these names in its decision log.

#: Before a call runs: it may be refused.
BEFORE = "PreToolUse"
#: A call ran (its result may still say it failed).
AFTER = "PostToolUse"
#: A call ran and the host says it failed.
FAILED = "PostToolUseFailure"
#: A batch of calls ran (Claude Code: the one event whose stop it honours).
BATCH = "PostToolBatch"
#: The person wrote: every streak starts again, a stop is lifted.
PROMPT = "UserPromptSubmit"
#: The agent goes on by itself: the model is about to be asked again, and no person wrote
#: (Qwen Code's UserPromptSubmit before every further request of a turn). Nothing is
#: observed; a host that ends a stopped run there (`Host.reply`) is asked.
RESUME = "Resume"
#: The agent's turn ended.
TURN_END = "Stop"
#: A sub-agent's turn ended.
SUBAGENT_END = "SubagentStop"

GUARD_EVENTS = (BEFORE, AFTER, FAILED, BATCH, PROMPT, RESUME, TURN_END, SUBAGENT_END)
#: The guard events that report calls that ran.
CALL_EVENTS = (AFTER, FAILED, BATCH)


#: Set by `loopwatch run` in the environment of the command it supervises (its hooks see it).
SUPERVISED = "LOOPWATCH_SUPERVISED"


class PayloadError(ValueError):
    """The payload is not a hook event we can read; the message says why."""


class Call:
    """One tool call as the host reported it (input and result trimmed). A plain class,
    not a dataclass: this module is imported on every hook call, and each dataclass
    costs about a millisecond to build."""

    __slots__ = ("call_id", "error", "input", "interrupted", "name", "refused", "result", "spawned")

    def __init__(
        self,
        name: str,
        input: Any,
        call_id: str | None = None,
        result: Any = None,
        error: bool = False,
        interrupted: bool = False,
        spawned: str | None = None,
        refused: bool | None = None,
    ) -> None:
        self.name, self.input, self.call_id = name, input, call_id
        self.result, self.error, self.interrupted = result, error, interrupted
        self.spawned = spawned  # the sub-agent this call ran (Claude Code's Agent tool), when known
        # What a report of a call that ran says of loopwatch's refusal: True, the refusal
        # ran in the call's place; False, the call ran as the model asked it (a refusal of
        # it was undone, by another hook); None, the report does not say (Claude Code).
        self.refused = refused


class Payload:
    """One hook event. `host` is the host's name; `event` the guard's name for it (one of
    `GUARD_EVENTS`, or the host's own name for an event the guard does not know), `native`
    the host's; `agent` is "" for the main agent; `calls` holds the call(s) of a tool
    event (a batch may hold several); `oversize` says stdin was larger than the limit and
    only the identifying fields could be read; `stamp` is when the host says the event
    happened (epoch seconds, its clock), None where it does not say. `parent`, for a
    sub-agent's event where the host names the agent that spawned it (and its own report
    of the spawning call does not name the sub-agent: Cline), is that agent's id in the
    host's words; else None."""

    __slots__ = ("agent", "calls", "cwd", "event", "host", "native", "oversize", "parent", "session", "stamp")

    def __init__(
        self,
        host: str,
        event: str,
        session: str,
        agent: str,
        cwd: str | None,
        calls: tuple[Call, ...] = (),
        oversize: bool = False,
        native: str | None = None,
        stamp: float | None = None,
        parent: str | None = None,
    ) -> None:
        self.host, self.event, self.session, self.agent, self.cwd = host, event, session, agent, cwd
        self.calls, self.oversize, self.stamp = calls, oversize, stamp
        self.native = event if native is None else native
        self.parent = parent


class Reply:
    """What the hook process writes: `stdout` (a JSON value or None), `stderr`, exit status."""

    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, stdout: Any = None, stderr: str = "", code: int = 0) -> None:
        self.stdout, self.stderr, self.code = stdout, stderr, code

    def __repr__(self) -> str:
        return f"Reply({self.stdout!r}, {self.stderr!r}, {self.code})"


ALLOW_REPLY = Reply()


class SwitchOff(NamedTuple):
    """A setting that switches the guard off: the file that holds it, and what it does.
    `kind`: "off" (the guard is off now), "later" (it will be, once the host reads the
    file: a folder not trusted yet), "undo" (not off, but a project's own hook runs
    after loopwatch's and can undo what it checked), or "held" (it would be off, but
    what holds loopwatch's hook on here whatever it says, a `--system` install, is named
    in `what`)."""

    path: str
    what: str
    kind: str = "off"


def _named(pattern: str, names: Collection[str]) -> bool:
    """Is `pattern` (a name, or a glob pattern) one of `names`?"""
    if pattern in names:
        return True
    if not any(c in pattern for c in "*?["):
        return False
    from fnmatch import fnmatchcase

    return any(fnmatchcase(name, pattern) for name in names)


class StateFolder(NamedTuple):
    """A folder of the host's own state, known by the names it holds (each pattern of
    `marker` matched by one of them; glob patterns) or by its own `name` (`.claude`): a
    folder walk (`scan`) enters or reads only its entries matching `keep` (glob patterns)
    and leaves the rest out by name, never opened: settings, credentials, trust lists,
    logs and caches are not transcripts.

    Given both a `name` and a `marker`, a folder must have both (opencode's folders are
    all called `opencode`, and only what they hold tells them from a clone of its code).
    A kept file matching `read` is a transcript whatever its name (opencode's sessions
    are a database, `opencode.db`).

    A session's own folder is known only beside its session file (`beside`: the suffix
    of that file, Claude Code's `<session>/` beside `<session>.jsonl`). What of it is
    the session's agents' transcripts (`parts`: paths in it, `*` within a name, `**` any
    folders) is read with the session file, as one session (`parts_of`): a walk neither
    reads it on its own nor counts it left out."""

    keep: tuple[str, ...]
    marker: tuple[str, ...]
    name: str = ""
    beside: str = ""
    parts: tuple[str, ...] = ()
    read: tuple[str, ...] = ()

    def known(self, folder: str, names: Collection[str]) -> bool:
        """Is `folder`, which holds `names`, one of these?"""
        folder = os.path.normpath(folder)
        if self.beside and not os.path.isfile(folder + self.beside):
            return False
        named = not self.name or os.path.basename(folder) == self.name
        marked = not self.marker or all(_named(m, names) for m in self.marker)
        return (bool(self.name) or bool(self.marker)) and named and marked

    def part(self, name: str) -> bool:
        """Does the entry `name` of such a folder hold its session's agents' transcripts?"""
        return any(pattern.split("/", 1)[0] == name for pattern in self.parts)

    def parts_of(self, session_file: str) -> list[str]:
        """The transcripts of a session's agents, sorted: the files matching `parts` in
        its folder (`session_file` less `beside`); [] when it has none."""
        if not self.parts or not self.beside or not session_file.endswith(self.beside):
            return []
        folder = session_file[: -len(self.beside)]
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        if not self.known(folder, names):
            return []
        from fnmatch import fnmatchcase

        def matches(names: list[str], pattern: list[str]) -> bool:
            if not pattern:
                return not names
            if pattern[0] == "**":
                return any(matches(names[i:], pattern[1:]) for i in range(len(names) + 1))
            return bool(names) and fnmatchcase(names[0], pattern[0]) and matches(names[1:], pattern[1:])

        found = []
        for root, folders, files in os.walk(folder):
            folders.sort()
            for file in sorted(files):
                path = os.path.join(root, file)
                relative = os.path.relpath(path, folder).split(os.sep)
                if any(matches(relative, p.split("/")) for p in self.parts) and os.path.isfile(path):
                    found.append(path)
        return found


class Host:
    """One agent CLI. Subclasses set the class attributes and override what differs;
    the defaults are Claude Code's hook protocol, which most hosts copy."""

    #: The name users type (`loopwatch install NAME`) and the state records.
    name: ClassVar[str]
    #: The name people know it by.
    title: ClassVar[str]
    #: The command on PATH.
    binary: ClassVar[str]
    #: Where it comes from (an npm package), for the messages that say how to get it.
    package: ClassVar[str | None] = None
    #: The releases the real-CLI tests drive (pinned, current); empty for a host built from
    #: its documentation alone.
    tested: ClassVar[tuple[str, ...]] = ()
    #: Built from the documentation, never run against the real CLI (said wherever offered).
    documented_only: ClassVar[bool] = False
    #: The host's event name -> the guard's (`GUARD_EVENTS`). Events not here are allowed.
    events: ClassVar[Mapping[str, str]]
    #: The events `install` hooks, in the host's words and in this order.
    hooked_events: ClassVar[tuple[str, ...]]
    #: The settings scopes `install` knows (`user` first).
    scopes: ClassVar[tuple[str, ...]] = ("user", "project")
    #: What the hook says the run was stopped with, beside the reason, when it ends a run
    #: (`end_run`): a host that ends runs by a signal says so here.
    ends_by: ClassVar[str] = ""
    #: Does the host report a call its hook refused, after the refusal (Claude Code's
    #: PostToolBatch does)? When it never does, a refusal is not remembered to be matched
    #: later: with no call ids, it would be taken for the next real run of that call.
    reports_refusals: ClassVar[bool] = True
    #: What `install` tells the person after writing a scope's file (scope -> a sentence).
    install_notes: ClassVar[Mapping[str, str]] = {}
    #: Folders of the host's own state a folder walk reads only in part (`StateFolder`).
    state_folders: ClassVar[tuple[StateFolder, ...]] = ()
    #: The tools a main agent runs a sub-agent with, for a host whose payloads do not
    #: say which agent a call is of (Gemini CLI): the hook tells a sub-agent's calls by
    #: when they come, between that call's before and after events (`_hook.spawns`).
    #: Empty where payloads name the agent (Claude Code's `agent_id`).
    spawn_tools: ClassVar[frozenset[str]] = frozenset()
    #: The tools with which a (sub-)agent hands back its result and ends: never refused
    #: and never answered with a stop. Refusing it keeps a stopped sub-agent running
    #: (Gemini CLI's `complete_task`: it retries to its turn limit).
    finish_tools: ClassVar[frozenset[str]] = frozenset()
    #: The shape of the "settings" `install` edits: "json" (one JSON object, read and
    #: written whole) or "files" (files of the host's own in a folder, which loopwatch's
    #: own are written, rewritten or removed whole: `read_folder`, `file_mode`; Cline's
    #: hook files, `FileHooks`; opencode's plugin).
    #: One scope may differ (`shape`).
    settings_shape: ClassVar[str] = "json"
    #: The mode of a file `install` writes where `settings_shape` is "files".
    file_mode: ClassVar[int] = 0o600
    #: Run the hook's Python isolated (`-I`: no `PYTHON*` variable, no module of the working
    #: folder), for a host that hands its hooks an environment a project can set (Cline
    #: loads a project's `.env` into it).
    isolated: ClassVar[bool] = False

    # -- the live guard ------------------------------------------------------------------------

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        """One payload (a JSON object), validated: the event in the guard's words and the
        calls it reports. `event` is the event's name in the host's words when the hook's
        command line gives it (a host whose payloads do not name their event is installed
        with one command per event). Raises `PayloadError`."""
        raise NotImplementedError

    def parse_oversize(self, fields: Mapping[str, str], event: str | None = None) -> Payload:
        """A payload too large to read, from the identifying fields found in its head and
        tail (`hook_event_name`, `session_id`, `tool_name`, ... as the host spells them in
        `oversize_fields`): a call gets a unique placeholder input, so it never looks like
        any other."""
        names = self.oversize_fields
        native, session = event or fields.get(names["event"]), fields.get(names["session"])
        if not native or not session:
            raise PayloadError("oversize payload without a readable event name and session id")
        event = self.events.get(native, native)
        calls: tuple[Call, ...] = ()
        tool = fields.get(names["tool"])
        if event in (BEFORE, AFTER, FAILED) and tool:
            marker = {"loopwatch": "oversize", "nonce": os.urandom(8).hex()}
            calls = (Call(tool, marker, fields.get(names["call_id"]), None, event == FAILED),)
        agent = fields.get(names.get("agent", ""), "")
        return Payload(self.name, event, session, agent, None, calls, oversize=True, native=native)

    #: The keys of the identifying fields, as the host spells them (for `parse_oversize`).
    oversize_fields: ClassVar[Mapping[str, str]] = {
        "event": "hook_event_name",
        "session": "session_id",
        "tool": "tool_name",
        "call_id": "tool_use_id",
        "agent": "agent_id",
    }

    def reply(self, payload: Payload, decision: Decision, stopped: str | None) -> Reply:
        """The answer to one event: `decision` is the guard session's, `stopped` the stop's
        reason once the run was stopped."""
        raise NotImplementedError

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        """Refuse the call of a before-call event (`native`, in the host's words) with
        `reason` for the model; `stop` also ends the run where the host allows it;
        `person` is what the person watching is told."""
        raise NotImplementedError

    def headless(self, argv: list[str]) -> str | None:
        """Is `argv` (a process's command line) this host run with nobody watching? The
        words that say so (`claude -p`), "" for the host run interactively, None for a
        process that is not this host."""
        return None

    def headless_process(self, pid: int, argv: list[str]) -> str | None:
        """`headless` for a running process (`pid`, its `argv`), for a host whose headless
        runs show in more than the command line (Gemini CLI: no terminal on stdin or
        stdout). The default: the command line alone."""
        return self.headless(argv)

    def detect_profile(self, env: Mapping[str, str], payload: Payload | None = None) -> tuple[str, str] | None:
        """The profile what the host put in the hook's environment (or what it records
        of the session `payload` belongs to) implies, and why; None when it says nothing
        (the process tree is asked next)."""
        return None

    def say(self, payload: Payload, text: str) -> bool:
        """Say `text` (one line, worded for a person) to the person running the session,
        by a way of the host's own, for a host whose answers reach no person (Cline prints
        nothing a hook says). True when it was said. The default: the answer says it.
        (`tell` is the other way: words the answer itself carries to the person.)"""
        return False

    def end_run(self, payload: Payload, reason: str, log: Callable[[str], object]) -> bool:
        """End an unattended run this host would carry on despite every stop answer
        (`ends_by` says how). Asked at each stop decision of a stopped run, and at each
        RESUME of one (the host's answer there may be what ends it). True when it was
        ended. The default: the host honours its stop answer, nothing more to do."""
        return False

    #: The event `probe_payload` is, in the host's words, where its payloads name none (the
    #: hook's command line does: `loopwatch hook HOST EVENT`); None where they do.
    probe_event: ClassVar[str | None] = None

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        """A harmless after-call payload, as the host would send it, for `doctor`'s dry
        run (`folder` is a throwaway folder the payload may name files in)."""
        raise NotImplementedError

    # -- its settings --------------------------------------------------------------------------

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        """The file `install` writes for `scope`. A `system` scope (settings for every
        user of the machine, which no project overrides) is written readable by all."""
        raise NotImplementedError

    def shape(self, scope: str) -> str:
        """The shape of what `install` edits for `scope`: `settings_shape`, or "pin" for a
        scope whose file holds no hook but a setting that keeps every user's hooks on
        whatever a project says (Codex's `system`: its requirements), edited by `pin`."""
        return self.settings_shape

    #: What a scope of shape "pin" holds once pinned, in the file's own words.
    pinned: ClassVar[str] = ""

    def pin(self, text: str, remove: bool = False) -> str | None:
        """For a scope of shape "pin": `text` (its file's, "" for none) with hooks pinned
        on (`remove`: without loopwatch's pin, and never another), or None when nothing
        changes. Raises SettingsError when it cannot be done safely."""
        raise NotImplementedError

    def read_folder(self, folder: Path) -> dict[str, str]:
        """Where `settings_shape` is "files": the "settings" `install`, `uninstall` and
        `hooked` work on, the files of `folder` (`settings_file`) they may touch, name ->
        text (a file's first lines may do); {} when the folder does not exist. A file left
        out of what `install` returns is removed, one added or changed is written whole
        (`file_mode`). Raises OSError when the folder or a file cannot be read; a link is
        never followed."""
        raise NotImplementedError

    def unread(self, scope: str, path: Path) -> str | None:
        """Why the host would not read `path`, the settings file of `scope`, as it stands
        (its owner, its mode); None when nothing says so."""
        return None

    def install(self, settings: Any, command: str, scope: str = "user") -> Any:
        """A copy of `settings` (the parsed file, {} when absent) with exactly one
        loopwatch hook per hooked event, running `command`. `scope` is the settings
        scope the file is (a host may write more at a level no project overrides)."""
        raise NotImplementedError

    def uninstall(self, settings: Any) -> Any:
        """A copy of `settings` without loopwatch's hooks; nothing else changes."""
        raise NotImplementedError

    def hooked(self, settings: Any) -> dict[str, list[str]]:
        """Event -> loopwatch's hook commands found in `settings`."""
        raise NotImplementedError

    def start_warnings(self, cwd: str, env: Mapping[str, str]) -> list[SwitchOff]:
        """What the person is told at a session's first hook call: what the project in
        `cwd` holds that can undo or switch off the guard, for a host that runs a project's
        own hooks beside the user's with no trust asked (Cline). Read only, and cheap: the
        hook calls it. The default: nothing (`doctor` reads `switch_offs`)."""
        return []

    def unguarded(self, argv: list[str], env: Mapping[str, str]) -> str | None:
        """Why this host, run as `argv` in `env`, would load no hook at all (loopwatch's
        among them: opencode's `--pure`), in a few words; None when nothing says so.
        `loopwatch run` refuses to start such a run unless told to."""
        return None

    def switch_offs(self, cwd: Path, env: Mapping[str, str]) -> list[SwitchOff]:
        """Settings found now (a project's, from `cwd`, or the user's own) that switch
        user hooks, and so the guard, off. Read only; a file that cannot be read is not
        reported."""
        return []

    #: Where to install so that no project switches the guard off: the host's level that
    #: no project overrides, where it has one.
    switch_off_remedy: ClassVar[str] = (
        "install where no project can override it (docs/hosts, 'When a project switches hooks off')"
    )

    def switch_off_advice(self, run: bool = True) -> str:
        """What to do about a setting that switches the guard off, in one clause: remove
        it, install where no project overrides, and (`run`) start the CLI under
        `loopwatch run` where its command line can hold hooks on."""
        advice = f"remove it, or {self.switch_off_remedy}"
        if run and self.keep_on([self.binary]) is not None:
            advice += f", or start {self.binary} under `loopwatch run`, which holds them on"
        return advice

    def switch_off_files(self, cwd: str) -> list[str]:
        """The project files, for a session in `cwd`, whose settings can switch hooks off
        (what `switch_offs` reads of the project), as text: the hook looks for them once, at
        a session's start, and reads `switch_offs` only when one is there. Empty: the
        hook does not look."""
        return []

    def installed_in(self, env: Mapping[str, str], cwd: Path) -> list[Path]:
        """The settings files (of the scopes `install` knows) that hold loopwatch's hook."""
        found = []
        for scope in self.scopes:
            if self.shape(scope) == "pin":
                continue  # no hook there
            try:
                path = self.settings_file(scope, env, cwd)
            except OSError:
                continue
            if self._hooked_at(path):
                found.append(path)
        return found

    def held(self, env: Mapping[str, str], cwd: Path) -> str | None:
        """What keeps loopwatch's hook running here whatever a project's settings say (the
        `system` scope's file, when loopwatch is installed there and the host reads it),
        else None. A host whose system level holds against a switch says so in
        `switch_offs` (kind "held")."""
        if "system" not in self.scopes:
            return None
        try:
            path = self.settings_file("system", env, cwd)
            if self._hooked_at(path) and self.unread("system", path) is None:
                return f"loopwatch's hooks in {path}, which no project overrides"
        except OSError:
            pass
        return None

    def _hooked_at(self, path: Path) -> bool:
        """Does the settings file (or folder of hook files) at `path` hold loopwatch's hook?"""
        if self.settings_shape == "files":
            read_folder = getattr(self, "read_folder", None)
            try:
                settings = read_folder(path) if read_folder is not None and path.is_dir() else None
            except OSError:
                return False
        else:
            settings = read_json(path)
        return isinstance(settings, dict) and bool(self.hooked(settings))

    def keep_on(self, argv: list[str]) -> list[str] | None:
        """`argv`, a command line of this host's CLI, with what keeps its hooks on
        whatever a project's settings say (for `loopwatch run`); None where no command
        line can, or `argv` already says something of its own there."""
        return None

    def tell(self, reply: Reply, text: str) -> Reply:
        """`reply` with `text` for the person watching, where the host shows a hook's
        words to them; `reply` itself where it shows none (or the reply cannot carry it)."""
        return reply

    def runs_here(self, cwd: Path, env: Mapping[str, str]) -> str | None:
        """Why the host would run no hook at all in `cwd` (Gemini CLI: a folder the user
        has not trusted), else None. Read only."""
        return None

    def env_files(self, cwd: str, env: Mapping[str, str]) -> list[str]:
        """A project's files whose variables the host puts into its hooks' environment
        (Gemini CLI's `.env`), for a session started in `cwd`: the user's own excepted.
        `loopwatch._trust` lets what they set only tighten the guard. (Paths as text: the
        hook asks on every call, and pathlib is not on its way.)"""
        return []

    def started_environ(self) -> dict[str, str] | None:
        """The environment the host's session process (an ancestor of this hook) was
        started with, where the host adds variables of its own to its hooks' afterwards
        (a `.env` it loads): what the user set is there, what the host added is not.
        None where this cannot be read or does not apply."""
        return None

    def env_from_files(self, env: Mapping[str, str]) -> dict[str, str]:
        """The variables of the hook's environment `env` that the host took from files
        a project can write (its `.env`, a settings file's `env`), each with where it
        came from, as the host itself says. `loopwatch._trust` lets them only tighten
        the guard. Empty where the host says nothing."""
        return {}

    #: A project settings file that can switch user hooks off, and what in it does so
    #: (regular expressions, searched in a call's input as JSON text: a write tool's path
    #: and content, a shell command, a patch, alike).
    switch_paths: ClassVar[str | None] = None
    switch_keys: ClassVar[str | None] = None

    def switches_off(self, call: Call, cwd: str | None) -> str | None:
        """Would this call (before it runs) write a setting that switches the guard off?
        The file it names, else None. The agent being guarded must not switch it off.

        A call is judged by what it says, whatever the tool: it names one of the host's
        project settings files (`switch_paths`) and the setting that switches hooks off
        (`switch_keys`). A write that reaches the file by another road (a script written
        first, a copy from elsewhere) is not seen here: `doctor` and `loopwatch run` read
        the file itself (`switch_offs`)."""
        if self.switch_paths is None or self.switch_keys is None:
            return None
        value = call.input
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if not re.search(self.switch_keys, text):
            return None
        found = re.search(self.switch_paths, text)
        return found.group(0) if found else None


# -- pieces hosts share --------------------------------------------------------------------------

#: How an entry is recognised as loopwatch's own: its command runs `loopwatch hook`.
OURS = re.compile(r"(?:^|[\s/\\])loopwatch(?:\.exe)?\s+hook\b")


def is_ours(command: Any) -> bool:
    return isinstance(command, str) and bool(OURS.search(command))


class JsonHooks(Host):
    """A host whose settings are one JSON object with a `hooks` table: event -> a list of
    groups `{"matcher": ..., "hooks": [{"type": "command", "command": ..., "timeout": N}]}`
    (Claude Code's shape, copied by Codex, Gemini CLI and Qwen Code). A subclass says how
    one group is written (`group`) and how a command is found in one (`commands`)."""

    #: Events whose group takes a tool matcher, and the matcher that means every tool.
    matcher_events: ClassVar[frozenset[str]] = frozenset()
    matcher: ClassVar[str] = "*"
    #: The hook's timeout as the host reads it, and its key.
    timeout: ClassVar[int] = 30
    timeout_key: ClassVar[str] = "timeout"

    def group(self, event: str, command: str) -> dict[str, Any]:
        group: dict[str, Any] = {
            "hooks": [{"type": "command", "command": command, self.timeout_key: self.timeout}],
        }
        if event in self.matcher_events:
            group = {"matcher": self.matcher, **group}
        return group

    def commands(self, group: Any) -> list[str]:
        inner = group.get("hooks") if isinstance(group, dict) else None
        return (
            [h["command"] for h in inner if isinstance(h, dict) and is_ours(h.get("command"))]
            if isinstance(inner, list)
            else []
        )

    def _without(self, group: Any) -> Any:
        """`group` without loopwatch's entries (None when nothing of it is left)."""
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            return group
        inner = [h for h in group["hooks"] if not (isinstance(h, dict) and is_ours(h.get("command")))]
        if len(inner) == len(group["hooks"]):
            return group
        return {**group, "hooks": inner} if inner else None

    def uninstall(self, settings: Any) -> Any:
        out = dict(settings)
        hooks = out.get("hooks")
        if not isinstance(hooks, dict):
            return out
        new_hooks: dict[str, Any] = {}
        for event, groups in hooks.items():
            if not isinstance(groups, list):
                new_hooks[event] = groups
                continue
            kept = [g for g in (self._without(group) for group in groups) if g is not None]
            if kept or not groups:
                new_hooks[event] = kept
        out["hooks"] = new_hooks
        return out

    def install(self, settings: Any, command: str, scope: str = "user") -> Any:
        out = self.uninstall(settings)
        hooks = out.get("hooks")
        if hooks is None:
            hooks = {}
        elif not isinstance(hooks, dict):
            raise SettingsError('the settings file\'s "hooks" is not an object; fix it by hand first')
        hooks = dict(hooks)
        for event in self.hooked_events:
            groups = hooks.get(event, [])
            if not isinstance(groups, list):
                raise SettingsError(f"the settings file's hooks.{event} is not a list; fix it by hand first")
            hooks[event] = [*groups, self.group(event, command)]
        out["hooks"] = hooks
        return out

    def hooked(self, settings: Any) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        hooks = settings.get("hooks") if isinstance(settings, dict) else None
        if not isinstance(hooks, dict):
            return out
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else []:
                found = self.commands(group)
                if found:
                    out.setdefault(event, []).extend(found)
        return out


#: The line that marks a hook file as loopwatch's own (`FileHooks`): only such files are
#: rewritten or removed.
FILE_MARK = "# loopwatch hook"
_HEAD = 4096  # bytes of a hook file read: the mark and the command are in its first lines


class FileHooks(Host):
    """A host that runs hook files of their own, one per event, found in folders it lists
    (Cline: `PreToolUse`, `PostToolUse`, ... in `~/Documents/Cline/Hooks`). `settings_file`
    names the folder, and the "settings" `install`, `uninstall` and `hooked` work on are
    its files: name -> the file's first lines (`read_folder`).

    loopwatch's files are small `/bin/sh` wrappers that carry `FILE_MARK` and `exec` the
    hook command with the event's name. A file of the same name that is not loopwatch's
    is never rewritten or removed: `install` refuses, naming it."""

    settings_shape = "files"
    #: The mode of a new hook file: the user's alone, and runnable by hand.
    file_mode = 0o700

    def file_name(self, event: str) -> str:
        """The name of the hook file for `event` (in the host's words)."""
        return event

    def file_text(self, event: str, command: str) -> str:
        """The hook file for `event`, running `command` (a shell command line)."""
        return (
            "#!/bin/sh\n"
            f"{FILE_MARK} for {self.title}: written by `loopwatch install {self.name}`; "
            f"`loopwatch uninstall {self.name}` removes it.\n"
            f"exec {command} {event}\n"
        )

    def event_of(self, name: str) -> str | None:
        """The event a file of this name is run for, as the host reads names; None for
        a file it never runs. Every event's, not only those `install` hooks: a file of
        loopwatch's for an event no longer hooked is found, and `uninstall` removes it."""
        return name if name in self.hooked_events else None

    def read_folder(self, folder: Path) -> dict[str, str]:
        return self.hook_files(str(folder))

    def hook_files(self, folder: str) -> dict[str, str]:
        """The regular files of `folder` the host may run (`event_of`), name -> their
        first 4 KiB as text; {} when the folder does not exist. Raises OSError when it
        cannot be listed or a file cannot be read; a link is read as what it is, never
        followed (the host skips links). Without pathlib: the hook reads a project's."""
        import stat

        from .._files import open_file

        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return {}
        out: dict[str, str] = {}
        for name in names:
            if self.event_of(name) is None:
                continue
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                out[name] = ""  # a link or a folder: the host does not run it, and it is not ours
                continue
            with open_file(path) as fh:
                out[name] = fh.read(_HEAD).decode("utf-8", "replace")
        return out

    @staticmethod
    def ours(text: Any) -> bool:
        """Is this hook file (its first lines) loopwatch's?"""
        return isinstance(text, str) and any(line.startswith(FILE_MARK) for line in text.splitlines()[:4])

    @staticmethod
    def command_in(text: str) -> str | None:
        """The command a loopwatch hook file runs (its `exec` line, event included)."""
        for line in text.splitlines()[:8]:
            if line.startswith("exec "):
                return line[len("exec ") :].strip()
        return None

    def install(self, settings: Any, command: str, scope: str = "user") -> Any:
        out = self.uninstall(settings)
        for event in self.hooked_events:
            name = self.file_name(event)
            if name in out:
                raise SettingsError(f"{name} is there and is not loopwatch's; move it aside first (the host runs both)")
            out[name] = self.file_text(event, command)
        return out

    def uninstall(self, settings: Any) -> Any:
        return {name: text for name, text in dict(settings).items() if not self.ours(text)}

    def hooked(self, settings: Any) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, text in dict(settings).items() if isinstance(settings, dict) else ():
            event = self.event_of(name)
            command = self.command_in(text) if self.ours(text) else None
            if event is not None and command is not None:
                out.setdefault(event, []).append(command)
        return out


class ClaudeStyle(JsonHooks):
    """A host that answers as Claude Code does (its hooks reference): a before-call deny in
    `hookSpecificOutput.permissionDecision`, a nudge as `additionalContext` after a call,
    `decision: "block"` to put a reason in front of the model after a call that ran,
    `continue: false` with `stopReason` to end the run, `systemMessage` for the person.
    Codex, Qwen Code and Gemini CLI copy it, each with its own differences."""

    def reply(self, payload: Payload, decision: Decision, stopped: str | None) -> Reply:
        from .._core.verdict import Action

        verdict = decision.verdict
        event = payload.event
        if payload.calls and all(call.name in self.finish_tools for call in payload.calls):
            return warn(verdict)  # an agent handing back its result: never refused, never stopped
        if event == BEFORE:
            if decision.blocks and decision.message is not None:
                return self.refuse(
                    payload.native, decision.message, stop=decision.action is Action.STOP, person=decision.reason
                )
            return warn(verdict)
        if event in CALL_EVENTS:
            if stopped is not None and verdict.action.rank < Action.STOP.rank:
                return self.stop_reply(payload.native, stopped)
            return self.after_call(payload.native, decision)
        return warn(verdict)  # a prompt, a turn's end: tell the person at most

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        from .._core.messages import Blocked, Stopped

        out: dict[str, Any] = {
            "hookSpecificOutput": {
                "hookEventName": native,
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

    def tell(self, reply: Reply, text: str) -> Reply:
        if reply.code != 0 or not (reply.stdout is None or isinstance(reply.stdout, dict)):
            return reply
        out = dict(reply.stdout or {})
        said = out.get("systemMessage")
        out["systemMessage"] = f"{said}\n{text}" if isinstance(said, str) and said else text
        return Reply(out, reply.stderr, reply.code)

    def stop_reply(self, native: str, reason: str) -> Reply:
        """End the run after a call (the run was stopped for `reason`)."""
        from .._core.messages import Stopped

        why = Stopped(reason).for_person()
        return Reply({"continue": False, "stopReason": why, "systemMessage": why})

    def after_call(self, native: str, decision: Decision) -> Reply:
        """The answer after a call ran: a nudge, a block (the call already ran: worded so
        by the guard session), a stop."""
        from .._core.messages import Warned
        from .._core.verdict import Action

        verdict = decision.verdict
        action = verdict.action
        message = decision.message or ""
        if action is Action.NUDGE:
            return Reply({"hookSpecificOutput": {"hookEventName": native, "additionalContext": message}})
        if action is Action.BLOCK:
            person = Warned(verdict.description or "").for_person()
            if native == AFTER:
                return Reply({"decision": "block", "reason": message, "systemMessage": person})
            return Reply(
                {"hookSpecificOutput": {"hookEventName": native, "additionalContext": message}, "systemMessage": person}
            )
        if action is Action.STOP:
            return self.stop_reply(native, verdict.description or "")
        return warn(verdict)


def warn(verdict: Any) -> Reply:
    """Tell the person watching of a warning (`systemMessage`), else allow in silence."""
    from .._core.messages import Warned
    from .._core.verdict import Action

    if verdict.action is Action.WARN and verdict.description:
        return Reply({"systemMessage": Warned(verdict.description).for_person()})
    return ALLOW_REPLY


class SettingsError(ValueError):
    """A settings file loopwatch will not edit: its shape is not what the host reads."""


def same_names(names: tuple[str, ...]) -> Mapping[str, str]:
    """An `events` table for a host whose events are the guard's own names."""
    from types import MappingProxyType

    return MappingProxyType({name: name for name in names})


def is_installed_here(host: Host, env: Mapping[str, str]) -> str | None:
    """Where `host`'s CLI is on this machine (its path on PATH), else None."""
    import shutil

    return shutil.which(host.binary, path=env.get("PATH"))


def text_field(raw: Mapping[str, Any], key: str, required: bool = False) -> str | None:
    """`raw[key]` when it is a string; None when absent; `PayloadError` for another type,
    or when `required` and absent or empty."""
    value = raw.get(key)
    if value is None:
        if required:
            raise PayloadError(f"missing {key}")
        return None
    if not isinstance(value, str) or (required and not value):
        raise PayloadError(f"{key}: expected a non-empty string")
    return value


def read_json(path: Path | str, limit: int = 1 << 20) -> Any:
    """A small JSON settings file, or None when it is absent, too large, or not JSON.
    For reading what a project holds (`switch_offs`): never raises."""
    from .._files import open_file

    try:
        with open_file(str(path)) as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def ancestors(levels: int = 8, start: int | None = None) -> list[tuple[int, list[str]]]:
    """(pid, argv) of this process's parent and its ancestors, nearest first, read from
    /proc (Linux); empty where that cannot be read."""
    out: list[tuple[int, list[str]]] = []
    pid = os.getppid() if start is None else start
    for _ in range(levels):
        if pid <= 1:
            break
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
            with open(f"/proc/{pid}/stat", "rb") as fh:
                parent = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        out.append((pid, argv))
        pid = parent
    return out


def write_stderr_of(pid: int, text: str) -> bool:
    """Append `text` to the standard error of process `pid` (a terminal, a pipe or a log
    file): where a host shows nothing a hook says, its own stderr is where the person
    running it looks. Never blocks, never becomes the controlling terminal; True when
    written."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(f"/proc/{pid}/fd/2", flags)
    except OSError:
        return False
    try:
        os.write(fd, text.encode("utf-8", "replace"))
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def process_environ(pid: int) -> dict[str, str] | None:
    """The environment process `pid` was started with, read from /proc (Linux); None
    where that cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read(1 << 20)
    except OSError:
        return None
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


# -- bounding what a payload holds ------------------------------------------------------------

_STRING_KEEP = 4096  # a long string keeps this many characters of head and of tail
_MAX_ITEMS = 256  # a long list or object keeps this many items (then a count)
_MAX_DEPTH = 16


def trim(value: Any, depth: int = 0) -> Any:
    """A copy of a JSON value with bounded size: long strings keep their head and
    tail (4 KiB each), long lists and objects their first 256 items, deep nesting
    stops at 16 levels. Enough to tell calls and results apart, never the whole of
    a huge file body or log: whatever is cut is replaced by a digest of all of it,
    so two values that differ only in what was cut stay different."""
    if isinstance(value, str):
        if len(value) <= 2 * _STRING_KEEP:
            return value
        return f"{value[:_STRING_KEEP]}\n…[{len(value)} chars {digest(value)}]…\n{value[-_STRING_KEEP:]}"
    if depth >= _MAX_DEPTH and isinstance(value, (dict, list)):
        return f"…[nested {digest(value)}]…"
    if isinstance(value, dict):
        items = list(value.items())
        out = {str(k): trim(v, depth + 1) for k, v in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            out["…"] = f"{len(items) - _MAX_ITEMS} more keys, {digest(dict(items[_MAX_ITEMS:]))}"
        return out
    if isinstance(value, list):
        out_list = [trim(v, depth + 1) for v in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            out_list.append(f"…[{len(value) - _MAX_ITEMS} more items, {digest(value[_MAX_ITEMS:])}]")
        return out_list
    return value


_DIGEST_CHARS = 1 << 16  # a string is hashed in pieces: no second copy of a large input


def digest(value: Any) -> str:
    """A digest of the whole of a JSON value, read without recursion (the nesting a
    payload may have is the parser's limit, not ours) and in bounded pieces."""
    from .._core.fingerprint import blake2b  # the bare BLAKE2: hashlib would load OpenSSL

    hasher = blake2b(digest_size=8)
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            hasher.update(b"s%d:" % len(item))
            for start in range(0, len(item), _DIGEST_CHARS):
                hasher.update(item[start : start + _DIGEST_CHARS].encode("utf-8", "surrogatepass"))
        elif isinstance(item, dict):
            hasher.update(b"{%d" % len(item))
            for key, sub in reversed(list(item.items())):
                stack.append(sub)
                stack.append(str(key))
        elif isinstance(item, list):
            hasher.update(b"[%d" % len(item))
            stack.extend(reversed(item))
        else:
            hasher.update(b"v" + repr(item).encode())
    return hasher.hexdigest()
