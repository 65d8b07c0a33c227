"""`labels/choose_nudges.py`: the nudge-only thresholds are chosen harm first, with a margin."""

from __future__ import annotations

import importlib.util
import itertools
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def chooser(monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "choose_nudges", os.path.join(HERE, "..", "labels", "choose_nudges.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # One axis, most careful first; 3 is what loopwatch ships.
    axes = (("reverify", "rounds", (0, 4, 3, 2)),)
    positions = list(itertools.product(range(4)))
    monkeypatch.setattr(module, "AXES", axes)
    monkeypatch.setattr(module, "POSITIONS", positions)
    monkeypatch.setattr(module, "SETTINGS", [(v,) for v in axes[0][2]])
    return module


def rows(nudged_resolved: dict[int, int], loop_nudge: dict[int, int | None]) -> list[dict]:
    """100 resolved TB2 sessions, the first `nudged_resolved[k]` nudged under setting k;
    one labelled loop (onset 5) first nudged at `loop_nudge[k]`."""
    out = []
    for n in range(100):
        out.append(
            {
                "corpus": "tb2",
                "path": f"ok-{n}",
                "resolved": True,
                "error": None,
                "label": None,
                "nudge": [3 if n < nudged_resolved[k] else None for k in range(4)],
                "stop": [None] * 4,
            }
        )
    out.append(
        {
            "corpus": "tb2",
            "path": "loop",
            "resolved": False,
            "error": None,
            "label": ["yes", 5, 9],
            "nudge": [loop_nudge[k] for k in range(4)],
            "stop": [None] * 4,
        }
    )
    return out


# off, 4, 3, 2: 3 catches the loop within the 3% bound, 2 nudges 10% of resolved sessions
NUDGED = {0: 0, 1: 0, 2: 2, 3: 10}
CAUGHT_AT_3 = {0: None, 1: None, 2: 6, 3: 6}


def test_the_harm_bound_comes_before_recall(chooser):
    # Only 2 catches the loop, but it nudges 10 of 100 resolved sessions: over the 3% bound.
    caught = {0: None, 1: None, 2: None, 3: 6}
    assert chooser.SETTINGS[chooser.choose(rows(NUDGED, caught), "recall", margin=0)] == (0,)
    # Within the bound, the setting that catches it is chosen.
    assert chooser.SETTINGS[chooser.choose(rows(NUDGED, CAUGHT_AT_3), "recall", margin=0)] == (3,)


def test_a_choice_needs_the_next_step_admissible_with_a_margin(chooser):
    # With a margin of 1, 3 is not kept: the step past it, 2, is over the bound. Off and
    # 4 are kept, catch nothing and nudge nothing: the tie goes to the more careful, off.
    assert chooser.SETTINGS[chooser.choose(rows(NUDGED, CAUGHT_AT_3), "recall", margin=1)] == (0,)


def test_with_a_margin_the_most_aggressive_admissible_step_back_is_chosen(chooser):
    # 4 catches the loop as well as 3 (later): with the margin, 4 is kept and chosen.
    caught = {0: None, 1: 8, 2: 6, 3: 6}
    assert chooser.SETTINGS[chooser.choose(rows(NUDGED, caught), "recall", margin=1)] == (4,)
    assert chooser.SETTINGS[chooser.choose(rows({0: 0, 1: 0, 2: 2, 3: 2}, caught), "recall", margin=0)] == (4,)
