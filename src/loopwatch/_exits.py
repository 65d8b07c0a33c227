"""The exit statuses of every command, in one table: `loopwatch --help` shows it whole,
each command's `--help` its own rows (`loopwatch hook -h` too, without click), and
`tests/test_cli_conventions.py` holds every command to it.

The rule: 0 is done and nothing found, 1 is something found (what the command looks
for: a loop, a problem), 2 is bad input (the command line, a file, a configuration,
an output that cannot be written), 128 + N is the signal N that ended it (130 after
Ctrl-C, 143 after SIGTERM). The commands that run another program (`run`,
`mcp-proxy`) add their own, and `hook` always answers 0: an agent CLI takes a hook's
other statuses for a refusal or a failure of the call it asked about.
"""

from __future__ import annotations

__all__ = ["BAD_INPUT", "FOUND", "OK", "ROWS", "epilog", "rows"]

OK = 0
FOUND = 1
BAD_INPUT = 2

#: (status, the commands it applies to ("*": every command but `hook`; "-run": not
#: `run`), what it means).
ROWS: tuple[tuple[str, str, str], ...] = (
    ("0", "* -run -mcp-proxy", "done, and nothing found"),
    ("0", "mcp-proxy", "the client closed the connection"),
    ("1", "scan", "a session would have been stopped"),
    ("1", "doctor", "a problem was found (each one a line saying what to do), or nothing is installed"),
    ("1", "mcp-proxy", "the wrapped server went away (it exited, or failed to start up)"),
    (
        "2",
        "*",
        (
            "bad input: the command line, a file missing or unreadable, an invalid configuration, "
            "an output that cannot be written"
        ),
    ),
    ("86", "run", "loopwatch ended the command: a loop"),
    ("87", "run", "loopwatch ended the command: no output for --idle seconds"),
    ("88", "run", "loopwatch ended the command: --max-runtime reached"),
    ("N", "run", "the command's own status, when it ended by itself (128+N if signal N ended it)"),
    ("126, 127", "run, mcp-proxy", "the command could not be started (not executable, not found)"),
    ("130, 143", "*", "ended by Ctrl-C or SIGTERM (128 + the signal); nothing half-written is left"),
    (
        "0",
        "hook",
        (
            "always: an agent CLI takes any other status for a refused or failed call; "
            "what went wrong is on stderr and in hook.log"
        ),
    ),
)


def rows(command: str | None = None) -> list[tuple[str, str, str]]:
    """The rows of `command` (every row with None), in the table's order."""
    if command is None:
        return list(ROWS)
    return [row for row in ROWS if _applies(row[1], command)]


def _applies(who: str, command: str) -> bool:
    names = who.replace(",", " ").split()
    if f"-{command}" in names:
        return False
    return command in names or ("*" in names and command != "hook")


def epilog(command: str | None = None, marked: bool = True) -> str:
    """The rows of `command` as a `--help` section; `marked`: with the `\\b` that keeps
    click from rewrapping it."""
    import textwrap

    lines = ["\b"] if marked else []
    lines.append("Exit status:" if command else "Exit status (each command's --help gives its own):")
    for status, who, meaning in rows(command):
        where = "" if command or who.startswith("*") else f"{who}: "
        lines += textwrap.wrap(
            f"{where}{meaning}",
            78,
            initial_indent=f"  {status:<9} ",
            subsequent_indent=" " * 12,
            break_on_hyphens=False,
        )
    return "\n".join(lines)
