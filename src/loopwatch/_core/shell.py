"""Does a shell command line always print something? Read from its text alone.

A terminal that runs a command shows what the command writes. Some commands write
every time they run, whatever the state of the machine: `echo DONE`, `pwd`, `ps aux`,
`ls -la /app` (a `total` line at least, or an error for a missing path), and an
interrupt key (`C-c`: a shell answers it with `^C` and a new prompt; a harness with a
note that nothing was running). When such a command comes back with nothing at all,
it did not run: the terminal is held by an earlier command that never returned (a
heredoc left open, a server in the foreground, a prompt waiting for a password).
`Step.stuck` reads it so, and `wedged` counts it.

Deliberately narrow, and wrong only toward "may be silent": a command line counts
only when, after any `cd`, `set`, `export`, `sleep` or `true`, its first command is
one of the programs below, nothing sends that program's output away (a redirection
of stdout; of stderr too for the programs whose only output for a missing operand is
an error), and its pipe, if any, goes only into filters that pass lines through
(`head`, `tail`, `sed`, `nl`, `cat`, `sort`). Anything conditional (`||`, `if`,
loops, a heredoc) or unknown reads as "may print nothing". The text is read here and
only a yes or no leaves this module.
"""

from __future__ import annotations

import re

__all__ = ["always_prints", "command_of"]

#: Programs that write to stdout every time they run, whatever their operands:
#: `echo`/`printf` with an argument, and reports of the system's state (a header
#: line at least).
_ALWAYS = frozenset({"echo", "printf", "pwd", "ps", "date", "whoami", "id", "uname", "env", "printenv", "df"})
#: Programs that print for every operand, and an error on stderr for a missing one:
#: silent only if stderr is sent away. `ls` counts only with `-l` or `-a` (a plain
#: `ls` of an empty folder prints nothing).
_OPERANDS = frozenset({"ls", "wc", "file", "stat", "du"})
#: Commands that print nothing and let the next one run.
_NEUTRAL = frozenset({"cd", "set", "export", "sleep", "true"})
#: Filters a pipe may pass through without losing every line.
_PASS = frozenset({"head", "tail", "sed", "nl", "cat", "sort", "column"})
#: Interrupt and end-of-input keys, as terminal harnesses take them.
_KEYS = frozenset({"C-c", "C-z", "C-d", "C-\\", "^C", "^Z", "^D"})
_WRAPPED = re.compile(r"(?:ba|da|z)?sh\s+(?:-[a-z]+\s+)*-[a-z]*c\s+(['\"])(.*)\1", re.DOTALL)
_CONTROL = re.compile(r"(?:^|[\s;&|(])(?:if|then|while|until|for|case|function)(?=\s)|<<|`|\$\(")
_STDOUT = re.compile(r"(?<![0-9&<])>|&>")
_STDERR = re.compile(r"2>(?!&1)")
_MAX_CHARS = 400  # a probe is short; a long line is a script, read as "may be silent"
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


def command_of(value: object) -> str | None:
    """The command line of a shell call's input: the string itself, or its `command`
    or `cmd` field (a list of words as Codex sends it: `["bash", "-lc", "ls"]`)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return None
    for key in ("command", "cmd"):
        item = value.get(key)
        if isinstance(item, str):
            return item
        if isinstance(item, list) and item and all(isinstance(word, str) for word in item):
            if len(item) == 3 and item[0].rsplit("/", 1)[-1] in _SHELLS and item[1] in ("-c", "-lc"):
                return str(item[2])
            return " ".join(item)
    return None


def always_prints(command: str) -> bool:
    """Would a terminal show something for `command`, whatever the machine's state?"""
    line = command.strip()
    if line in _KEYS:
        return True
    if not line or len(line) > _MAX_CHARS:
        return False
    wrapped = _WRAPPED.fullmatch(line)
    if wrapped is not None:
        line = wrapped.group(2).strip()
    if _CONTROL.search(line):
        return False
    for segment, joined_by_or in _segments(line):
        pipeline = segment.split("|")
        words = pipeline[0].split()
        if not words or words[0].startswith("#"):
            continue
        program = words[0]
        if program in _NEUTRAL:
            continue
        if joined_by_or or (program not in _ALWAYS and program not in _OPERANDS):
            return False
        if _STDOUT.search(segment) or any(not p.split() or p.split()[0] not in _PASS for p in pipeline[1:]):
            return False
        if program in ("echo", "printf"):
            return len(words) > 1
        if program in _OPERANDS:
            if _STDERR.search(segment):
                return False
            if program == "ls":
                return any(w.startswith("-") and not w.startswith("--") and ("l" in w or "a" in w) for w in words[1:])
        return True
    return False


def _segments(line: str) -> list[tuple[str, bool]]:
    """The commands of a line split at `;`, `&&`, `||` and newlines outside quotes,
    each with whether an `||` came before it (it may never run)."""
    out: list[tuple[str, bool]] = []
    current: list[str] = []
    quote = ""
    after_or = False
    i = 0
    while i < len(line):
        char = line[i]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                current.append(char)
                i += 1
                char = line[i] if i < len(line) else ""
            current.append(char)
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char in ";\n" or line.startswith(("&&", "||"), i):
            out.append(("".join(current).strip(), after_or))
            after_or = after_or or line.startswith("||", i)
            current = []
            i += 1 if char in ";\n" else 2
            continue
        else:
            current.append(char)
        i += 1
    out.append(("".join(current).strip(), after_or))
    return [(segment, joined) for segment, joined in out if segment]
