"""Print a TB2 events session compactly, for labelling by reading.

Tool calls are numbered as `loopwatch evaluate` numbers steps in the events format
(the 1-based count of tool events); other events (model text, user prompts, harness
corrections) are shown unnumbered under the call they follow.

    python labels/show.py ../shared/corpus-tb2/<task>/<file>.jsonl [--width 150]
"""

from __future__ import annotations

import argparse
import json


def _short(value: object, width: int) -> str:
    if isinstance(value, dict):
        if "output_lost_in_source" in value:
            return "<lost>"
        if "cmd" in value:
            value = value["cmd"] if value["cmd"] is not None else "<no input>"
        else:
            value = json.dumps(value)
    text = str(value).replace("\n", "⏎")
    return text if len(text) <= width else text[:width] + f"…(+{len(text) - width})"


def show(path: str, width: int) -> None:
    step = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            event = json.loads(line)
            kind = event.get("type")
            if kind == "tool":
                step += 1
                print(f"{step:3d} {event.get('name')}: {_short(event.get('input'), width)}")
                print(f"      => {_short(event.get('result'), width)}")
            elif kind == "text":
                mark = "lost" if event.get("lost_in_source") else _short(event.get("text", ""), width // 2)
                print(f"    ~ text: {mark}")
            elif kind == "correction":
                print(f"    ! correction: {_short(event.get('message', ''), width)}")
            elif kind == "user":
                print("    > user (automatic or later prompt)")
            else:
                print(f"    . {kind}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--width", type=int, default=150)
    args = parser.parse_args()
    for path in args.paths:
        print(f"=== {path}")
        show(path, args.width)


if __name__ == "__main__":
    main()
