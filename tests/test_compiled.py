"""The optional compiled core (setup.py, `LOOPWATCH_COMPILE=1`) decides as pure Python does.

The compiled build is made apart (`.ci/run` builds it in a throwaway folder with
`python setup.py build_ext --inplace`) and named by `LOOPWATCH_COMPILED_SRC`, its `src`
folder; without it, or without ../shared, the tests that need them skip. Each side runs
in its own process with its own `src` first on the path, so the two never share a module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE = ROOT / "src"
SHARED = ROOT.parent / "shared"
CORPORA = [SHARED / "corpus", SHARED / "corpus-tb2"]
COMPILED = Path(os.environ["LOOPWATCH_COMPILED_SRC"]) if os.environ.get("LOOPWATCH_COMPILED_SRC") else None

needs_compiled = pytest.mark.skipif(
    COMPILED is None or not any((COMPILED / "loopwatch" / "_core").glob("monitor.*.so")),
    reason="no compiled build (LOOPWATCH_COMPILED_SRC: a src folder built with LOOPWATCH_COMPILE=1)",
)


def run(src: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, cwd=ROOT)


def test_the_pure_tree_says_it_is_not_compiled():
    done = run(PURE, "-c", "import loopwatch; print(loopwatch.__compiled__)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@needs_compiled
def test_the_compiled_build_says_it_is_compiled():
    assert COMPILED is not None
    done = run(COMPILED, "-c", "import loopwatch; print(loopwatch.__compiled__, loopwatch.__file__)")
    assert done.returncode == 0, done.stderr
    compiled, where = done.stdout.split()
    assert compiled == "True" and Path(where).is_relative_to(COMPILED)


@pytest.mark.slow
@needs_compiled
@pytest.mark.skipif(not all((c / "MANIFEST.tsv").is_file() for c in CORPORA), reason="shared corpora absent")
@pytest.mark.parametrize("corpus", CORPORA, ids=lambda c: c.name)
def test_scan_of_each_corpus_is_the_same_compiled_and_pure(corpus):
    assert COMPILED is not None
    scans = [run(src, "-m", "loopwatch", "scan", "--json", "--no-progress", str(corpus)) for src in (PURE, COMPILED)]
    for done in scans:
        assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: a session would have been stopped
    pure, compiled = (done.stdout.splitlines() for done in scans)
    assert len(pure) > 100  # one record per session: the corpus was read
    assert [json.loads(line)["path"] for line in compiled] == [json.loads(line)["path"] for line in pure]
    for line_pure, line_compiled in zip(pure, compiled, strict=True):
        assert line_compiled == line_pure
    assert scans[1].returncode == scans[0].returncode


# A session fed event by event, its monitor saved by the hook's codec and loaded again
# after every event (as the hook does between calls), against one kept in memory: the
# verdicts, the record, and the saved state's layout tag, printed as JSON.
_ROUND_TRIP = r"""
import json
import loopwatch
from loopwatch import Monitor, ModelText, Output, ToolCall, Turn, UserMessage
from loopwatch._hook import codec

def events():
    at = 0.0
    for i in range(3):
        at += 1
        yield ToolCall("Bash", {"command": f"ls d{i}"}, f"file{i}", at=at)
    yield Output("building 1 of 3\r\nbuilding 2 of 3\nerror: x\n", at=at + 0.5)
    yield ModelText("Let me try again. ", chunk=True, at=at + 0.6)
    yield ModelText("I will run the tests. Sorry for that.", chunk=True, at=at + 0.7)
    yield Turn(at=at + 0.8)
    for i in range(8):
        at += 2
        yield ToolCall("Bash", {"command": "pytest -x"}, "FAILED test_a - 1 failed in 0.3s", error=True, at=at)
        yield ToolCall("Read", {"path": "a.py"}, "def a(): return 1", at=at + 0.5)
        yield Output(f"attempt {i}\nerror: x\n", at=at + 1)
    yield UserMessage(at=at + 5)
    for i in range(5):
        yield ToolCall("Bash", {"command": "make"}, "make: *** [all] Error 2", error=True, at=at + 6 + i)

def verdict(v):
    return [v.action.value, v.signal, v.description, v.message]

kept, saved = Monitor(profile="unattended"), Monitor(profile="unattended")
out = []
for event in events():
    saved = codec.loads(codec.dumps(saved))
    out.append([verdict(kept.observe(event)), verdict(saved.observe(event))])
print(json.dumps({"compiled": loopwatch.__compiled__, "verdicts": out, "record": [kept.record(), saved.record()],
                  "layout": codec.layout()}, default=str))
"""


def round_trip(src: Path) -> dict:
    done = run(src, "-c", _ROUND_TRIP)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_a_saved_and_loaded_monitor_decides_like_one_kept_in_memory_pure():
    pure = round_trip(PURE)
    assert not pure["compiled"]
    assert all(kept == saved for kept, saved in pure["verdicts"])
    assert {v[0] for v, _ in pure["verdicts"]} >= {"allow", "nudge", "stop"}  # the session climbs the ladder


@needs_compiled
def test_the_compiled_monitor_saved_and_loaded_decides_as_pure_python():
    assert COMPILED is not None
    pure, compiled = round_trip(PURE), round_trip(COMPILED)
    assert compiled["compiled"]
    assert compiled["verdicts"] == pure["verdicts"]
    assert compiled["record"] == pure["record"]
    # A state written by one build is refused by the other: the session starts afresh.
    assert compiled["layout"] != pure["layout"]


@needs_compiled
def test_a_compiled_state_with_a_foreign_attribute_is_refused():
    assert COMPILED is not None
    script = r"""
import json
from loopwatch import Monitor, ToolCall
from loopwatch._hook import codec
blob = json.loads(codec.dumps(Monitor()))
state = blob["state"]
assert state[0] == "o" and "events" in state, state[:4]
for bad in ("__class__", "observe", "nonexistent"):
    state[2] = bad
    try:
        codec.loads(json.dumps(blob))
    except codec.StateError as exc:
        print("refused", bad, exc)
    else:
        print("LOADED", bad)
blob = json.loads(codec.dumps(Monitor()))
blob["state"][blob["state"].index("events") + 1] = "many"  # an int attribute given a string
try:
    codec.loads(json.dumps(blob))
except codec.StateError as exc:
    print("refused", "type", exc)
else:
    print("LOADED", "type")
"""
    done = run(COMPILED, "-c", script)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith("refused") for line in lines), done.stdout


@needs_compiled
def test_every_compiled_class_the_hook_stores_is_made_without_running_its_init():
    """The codec makes a stored object with the class's `__new__`: for a compiled class
    that runs no `__init__` only when mypyc is told so (`_core/native.py`)."""
    assert COMPILED is not None
    script = r"""
from loopwatch._hook import codec
for cls, attributes in codec.registry().compiled.items():
    empty = cls.__new__(cls)
    print(cls.__qualname__, len(attributes), sum(hasattr(empty, name) for name in attributes))
"""
    done = run(COMPILED, "-c", script)
    assert done.returncode == 0, done.stderr[-3000:]
    made = {name: (int(total), int(set_)) for name, total, set_ in (line.split() for line in done.stdout.splitlines())}
    assert {"Monitor", "Policy", "LineCutter", "_Screen", "PassageCutter", "TailCycles"} <= made.keys()
    assert {name: set_ for name, (total, set_) in made.items() if set_} == {}


@pytest.mark.slow
def test_the_default_build_needs_no_compiler(tmp_path):
    """`pip install .` builds pure Python: a wheel for any platform, no extension, with no
    C compiler (`CC` points at one that always fails), in pip's own isolated build
    environment (setuptools from the index, as a user's install gets it)."""
    env = dict(os.environ, CC="false", LDSHARED="false")
    env.pop("LOOPWATCH_COMPILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = tmp_path.glob("loopwatch-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "loopwatch/_core/monitor.py" in names
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c"))]
