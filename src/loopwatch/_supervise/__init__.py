"""Supervising an agent process: `loopwatch run -- <command>`.

    from loopwatch import load_config
    from loopwatch._supervise import Limits, Supervisor

    outcome = Supervisor(["my-agent", "--task", "x"], load_config(), Limits(idle=300)).run()
    sys.exit(outcome.status)      # 86 loop, 87 idle, 88 max runtime, else the child's

Modules: `group` (the child's process group), `pump` (moving output through),
`streams` (output -> monitor events, with claude/codex structured streams),
`transcript` (following the transcript the agent writes), `pty` (the child on a
pseudo-terminal), `supervisor` (the loop), `record` (the outcome, its record and
exit status), `hold` (which agent CLI the command runs, and its hooks kept on against a
project's settings, or the run refused).
POSIX only.
"""

from .record import ENDED_BY, EXIT_IDLE, EXIT_LOOP, EXIT_MAX_RUNTIME, Outcome, write_record
from .streams import FORMATS, EventSource
from .supervisor import Limits, Supervisor

__all__ = [
    "ENDED_BY",
    "EXIT_IDLE",
    "EXIT_LOOP",
    "EXIT_MAX_RUNTIME",
    "FORMATS",
    "EventSource",
    "Limits",
    "Outcome",
    "Supervisor",
    "write_record",
]
