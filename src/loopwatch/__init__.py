"""loopwatch: notice when an AI agent is going in circles, and stop the waste.

The core is pure and clock-free: feed a `Monitor` events carrying the times you saw
them, and it answers each with a `Verdict` (allow, warn, nudge, block, stop).
"""

from typing import TYPE_CHECKING, Any

from ._configfile import apply_env, find_config, load_config, read_config_file
from ._core.config import Config, ConfigError, ToolRule
from ._core.events import Attempt, Correction, Event, ModelText, Output, Retry, ToolCall, Turn, UserMessage
from ._core.finding import Finding
from ._core.monitor import Monitor
from ._core.verdict import Action, Verdict

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
    "apply_env",
    "drop",
    "find_config",
    "load_config",
    "read_config_file",
]

__version__ = "0.2.0"

if TYPE_CHECKING:
    from ._guard import Decision, Guard, drop

# Imported on first use, so `import loopwatch` (and the hook, which never needs them)
# pays nothing for them.
_LAZY = {"Decision": "_guard", "Guard": "_guard", "drop": "_guard"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopwatch' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
