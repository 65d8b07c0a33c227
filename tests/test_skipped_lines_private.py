"""A skipped events line is described by its line number, the field and the kind of
value found there, never by the value: a bad line can hold model text, an output line,
or a command with its token, and records keep no inputs, results or output lines
(on stderr, in `--json`, in `--out`)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from loopwatch._cli import cli

from conftest import jsonl, looping_events

SECRET = "sk-live-7f3a9c"  # a token a command line carried

BAD_LINES = [
    ({"type": "text", "text": [f"the model wrote {SECRET}"]}, "'text'", "array"),
    ({"type": "output", "data": {"line": f"export TOKEN={SECRET}"}}, "'data'", "object"),
    ({"type": "tool", "name": "Bash", "input": {}, "at": f"curl -H {SECRET}"}, "'at'", "string"),
    ({"type": "tool", "name": "Bash", "input": {}, "tokens": SECRET}, "'tokens'", "string"),
    ({"type": "tool", "name": {"cmd": SECRET}, "input": {}}, "'name'", "object"),
    ({"type": {"cmd": SECRET}}, "'type'", "object"),
    ({"type": f"run {SECRET}"}, "unknown event type", None),
    ({"type": "correction", "message": 12}, "'message'", "number"),
]


def test_a_skipped_line_names_its_line_field_and_kind_never_its_value(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl([*looping_events(), *(line for line, _, _ in BAD_LINES)]))
    out = tmp_path / "rows.jsonl"
    done = CliRunner().invoke(cli, ["scan", "--no-progress", "--json", "--out", str(out), str(path)])
    assert done.exit_code == 1, done.output
    (record,) = [json.loads(line) for line in done.stdout.splitlines()]
    written = out.read_text()
    for shown in (done.stderr, done.stdout, written):
        assert SECRET not in shown
    first = len(looping_events()) + 1
    skipped = record["skipped"]
    assert len(skipped) == len(BAD_LINES)
    for number, (message, (_, field, kind)) in enumerate(zip(skipped, BAD_LINES), start=first):
        assert message.startswith(f"line {number}: "), message
        assert field in message, message
        if kind is not None:
            assert kind in message, message
    assert "skipped" in done.stderr and f"line {first}" in done.stderr
