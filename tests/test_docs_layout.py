"""The layout is described once, in CONTRIBUTING.md, and describes the package as it is.

Every module at the top of the package has its row (what it is for, its layer), every row
names a module that exists, and the README points to that table instead of describing the
layout a second way.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "loopwatch"


def layout_rows(text: str) -> dict[str, str]:
    """The table of CONTRIBUTING.md's "The layout": module -> layer."""
    section = text.split("\n## The layout\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(loopwatch[\w.]*)`[^|]*\| [^|]+ \| ([^|]+) \|$", section, re.MULTILINE)
    return {module: layer.strip() for module, layer in rows}


def top_modules() -> set[str]:
    found = {"loopwatch"}
    for path in PACKAGE.iterdir():
        if path.is_dir() and (path / "__init__.py").exists():
            found.add(f"loopwatch.{path.name}")
        elif path.suffix == ".py" and path.stem not in {"__init__", "__main__"}:
            found.add(f"loopwatch.{path.stem}")
    return found


def test_the_layout_lists_every_module_of_the_package_and_no_other():
    rows = layout_rows((ROOT / "CONTRIBUTING.md").read_text())
    assert set(rows) == top_modules(), "CONTRIBUTING.md's layout table and src/loopwatch disagree"
    assert all(rows.values()), "every module has its layer"


def test_the_readme_links_to_the_one_layout():
    readme = (ROOT / "README.md").read_text()
    assert "CONTRIBUTING.md#the-layout" in readme
    # the layout described a second way, as a list of the core's modules, would drift
    assert "`src/loopwatch/_core/` is" not in readme


def test_the_table_is_read_as_written():
    text = "x\n## The layout\n\n| module | what | layer |\n|---|---|---|\n| `loopwatch.a` | it | 1 a |\n\n## Next\n| `loopwatch.b` | no | 2 |\n"
    assert layout_rows(text) == {"loopwatch.a": "1 a"}
