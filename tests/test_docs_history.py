"""Docstrings and comments say what holds, not how it came to be.

History (which issue or round changed a thing, a figure before and after) belongs in
CHANGELOG.md and BENCHMARKS.md; in the code it goes stale the day it is written. Each
signal's docstring says its grade and the evidence for it, with what re-measures it.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from pathlib import Path

import pytest

from loopwatch._core.signals import SIGNALS

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    [*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("bench").glob("*.py"), *ROOT.joinpath("labels").glob("*.py")]
)

#: What history looks like in prose: "issue 8", "round 3 of issue 10", "this round", and
#: a figure before and after ("56.2% -> 57.3%", "step 20 -> 11").
HISTORY = re.compile(
    r"\bissue\s+#?[0-9]+"
    r"|\bround\s+[0-9]+"
    r"|\b(?:this|last|previous|next)\s+round\b"
    r"|[0-9][0-9.,]*\s*[%x]?\s*(?:->|→)\s*[0-9]",
    re.IGNORECASE,
)


def prose(source: str) -> list[tuple[int, str]]:
    """Each comment and docstring of a module, with the line it starts on."""
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.append((first.lineno, first.value.value))
    return found


def history_in(source: str) -> list[str]:
    return [f"line {line}: {match.group(0)!r}" for line, text in prose(source) for match in HISTORY.finditer(text)]


def test_the_check_sees_history_in_docstrings_and_comments_only():
    source = '''"""Evidence (round 4 of issue 10): saved 56.2% -> 57.3%."""

def f() -> int:  # cached since issue 9
    """The step moved: 20 -> 11."""
    arrow = "1 -> 2"  # a string in code is no prose
    return 1
'''
    assert [m.split(": ", 1)[1] for m in history_in(source)] == [
        "'issue 9'",
        "'round 4'",
        "'issue 10'",
        "'56.2% -> 5'",
        "'20 -> 1'",
    ]
    assert history_in('def f(x: int) -> int:\n    """PreToolUse -> Monitor.check."""\n    return x\n') == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_history_in_docstrings_or_comments(path):
    assert history_in(path.read_text(encoding="utf-8")) == [], (
        f"{path.relative_to(ROOT)}: history belongs in CHANGELOG.md (what changed) and "
        "BENCHMARKS.md (the figures); say what holds and the command that re-measures it"
    )


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_every_signal_says_its_grade_and_its_evidence(name):
    module = inspect.getdoc(inspect.getmodule(SIGNALS[name])) or ""
    assert "Grade:" in module, f"{name}: say its grade (proof, suspicion or judgement) and why"
    evidence = module[module.find("Evidence") :] if "Evidence" in module else ""
    assert evidence, f"{name}: say the evidence for it"
    assert re.search(r"`(?:python\s+)?(?:loopwatch\s+\w+|bench/\w+\.py)|tests/test_\w+\.py", evidence), (
        f"{name}: name the command that re-measures its evidence"
    )
