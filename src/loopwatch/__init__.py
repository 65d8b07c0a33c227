"""loopwatch: notice when an AI agent is going in circles, and stop the waste.

The core is pure and clock-free: feed a `Monitor` events carrying the times you saw
them, and it answers each with a `Verdict` (allow, warn, nudge, block, stop).
"""

from .config import Config, ConfigError, ToolRule, load_config
from .events import Attempt, Correction, Event, ModelText, Output, Retry, ToolCall, Turn, UserMessage
from .finding import Finding
from .guard import Decision, Guard, drop
from .monitor import Monitor
from .verdict import Action, Verdict

__all__ = [
    "Action",
    "Attempt",
    "Config",
    "ConfigError",
    "Correction",
    "Decision",
    "Event",
    "Finding",
    "Guard",
    "ModelText",
    "Monitor",
    "Output",
    "Retry",
    "ToolCall",
    "ToolRule",
    "Turn",
    "UserMessage",
    "Verdict",
    "drop",
    "load_config",
]

__version__ = "0.1.0"
