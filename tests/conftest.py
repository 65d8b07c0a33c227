from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
# The shared corpus (read-only, next to the project); the tests that need it skip without it.
CORPUS = str(ROOT.parent / "shared" / "corpus")
needs_corpus = pytest.mark.skipif(not (Path(CORPUS) / "labels.tsv").is_file(), reason="shared corpus absent")


def corpus_label(path: str):
    """The hand label of one corpus session (`path` relative to the corpus)."""
    from loopwatch._analysis.evaluation import load_labels

    (label,) = [lab for lab in load_labels(str(Path(CORPUS) / "labels.tsv")) if lab.path == path]
    return label


def replay_corpus(path: str):
    """The first interventions on one corpus session (`path` relative to the corpus), as
    `evaluate` replays it: the unattended profile, calibrated for the session's source."""
    from loopwatch._analysis.evaluation import _load, first_interventions
    from loopwatch._core.config import Config

    events, step_of, source = _load(path, CORPUS)
    return first_interventions(events, Config.make(profile="unattended").for_source(source), step_of)


def jsonl(lines) -> str:
    """Events (dicts) and raw strings as JSON Lines text."""
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)


def looping_events(times: int = 6) -> list[dict]:
    """A run that retries the same failing command, unchanged, `times` times."""
    call = {
        "type": "tool",
        "name": "Bash",
        "input": {"command": "pytest -x"},
        "error": True,
        "result": "E   ImportError: cannot import name 'cart_total'",
    }
    return [{"type": "user"}] + [dict(call, tokens=1000, cost=0.01) for _ in range(times)]


def healthy_events() -> list[dict]:
    return [{"type": "user"}] + [
        {"type": "tool", "name": "Bash", "input": {"command": f"git add src/file_{i}.py"}, "result": ""}
        for i in range(8)
    ]


@pytest.fixture(autouse=True)
def _no_machine_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's settings in /etc that loopwatch reads and `install --system` writes
    for Claude Code and Codex (paths no variable moves), redirected into the test's
    folder for every test run in this process: none reads or writes the real ones. (The
    real-CLI tests that must use /etc run loopwatch as a process of its own, through
    `real_clis.etc_written`.)"""
    from loopwatch._hosts import claude_code, codex

    folder = tmp_path / "machine-etc"
    monkeypatch.setattr(claude_code, "MANAGED_SETTINGS", str(folder / "claude-code" / "managed-settings.json"))
    monkeypatch.setattr(codex, "REQUIREMENTS", str(folder / "codex" / "requirements.toml"))
    monkeypatch.setattr(codex, "MANAGED_CONFIG", str(folder / "codex" / "managed_config.toml"))


@pytest.fixture
def examples() -> Path:
    return EXAMPLES
