"""Extending loopwatch from outside: a signal of your own in a monitor, a reader of your
own for `scan`; the documented ways (CONTRIBUTING.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from loopwatch import Action, Monitor, ToolCall
from core_support import OFF
from extend_example import DeployParams, Redeploy


def deploy(n: int) -> ToolCall:
    return ToolCall("deploy", {"target": f"prod-{n}"}, f"deployed build {n}", at=float(n))


def test_a_signal_of_your_own_is_consulted_under_the_same_policy() -> None:
    m = Monitor(signals=OFF, extra_signals=[Redeploy(DeployParams())])
    verdicts = [m.observe(deploy(n)) for n in range(1, 4)]
    assert [v.action for v in verdicts] == [Action.WARN, Action.NUDGE, Action.STOP]
    assert "deployed 2 times without a change" in (verdicts[1].message or "")
    assert m.record()["findings"][0]["message"] == "Redeployed"


def test_a_write_between_deploys_is_progress_for_it() -> None:
    m = Monitor(signals=OFF, extra_signals=[Redeploy(DeployParams())])
    m.observe(deploy(1))
    m.observe(ToolCall("Write", {"file_path": "a.py"}, "ok", changed=("a.py",), at=1.5))
    assert m.observe(deploy(2)).action is not Action.NUDGE  # counted from 1 again
    assert m.observe(deploy(3)).action is Action.NUDGE
    assert m.stop is None


@pytest.mark.parametrize("extra", [object(), Redeploy(DeployParams())], ids=["not-a-signal", "twice"])
def test_an_extra_signal_must_be_a_signal_with_a_name_of_its_own(extra: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        Monitor(extra_signals=[Redeploy(DeployParams()), extra])


def test_an_extra_signal_may_not_take_a_built_in_name() -> None:
    class Impostor(Redeploy):
        name = "repeat"

    with pytest.raises(ValueError, match="name of its own"):
        Monitor(extra_signals=[Impostor(DeployParams())])


def test_a_reader_of_your_own_is_used_by_scan(tmp_path) -> None:
    # A format loopwatch does not know: one JSON object per line, {"do": ..., "got": ...}.
    package = tmp_path / "myreaders"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "doing.py").write_text(
        textwrap.dedent("""
        import json
        from loopwatch import ToolCall
        from loopwatch.extend import Session

        NAME = "doing"

        def sniff(path, head):
            return path.endswith(".doing")

        def read(path, stream=None):
            def events():
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        row = json.loads(line)
                        yield ToolCall("Bash", {"command": row["do"]}, row["got"], error=True,
                                       source_ref=f"line {n}")
            yield Session(format=NAME, session="one", events=events())
    """)
    )
    log = tmp_path / "run.doing"
    log.write_text("".join(json.dumps({"do": "make", "got": "error: no rule"}) + "\n" for _ in range(12)))
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from loopwatch.extend import register_reader
        register_reader("doing", "myreaders.doing")
        from loopwatch._cli import cli
        sys.argv = ["loopwatch", "scan", "--json", {str(log)!r}]
        cli()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr  # a loop was stopped
    record = json.loads(done.stdout.splitlines()[0])
    assert record["format"] == "doing" and record["verdict"]["action"] == "stop"


def test_a_reader_name_is_registered_once() -> None:
    from loopwatch.extend import register_reader

    with pytest.raises(ValueError, match="already"):
        register_reader("swe-agent", "somewhere.else")
