"""One self-contained HTML page from the report's data: no file beside it, no request
made (its Content-Security-Policy forbids any), its script and style inline with a
fresh nonce, the data one JSON blob the script reads. Jinja2 renders it, autoescaping.

`write_page` writes the page as its data comes: the HTML up to the blob, the page's
facts, each session's row (its timeline copied in from a scratch file when it was
spooled, see `sessions`), then the rest; no session is held once written, and the page
itself is never held whole. `render` is the same page as a string."""

from __future__ import annotations

import io
import os
import secrets
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["Spooled", "render", "script_json", "write_page"]

_HERE = Path(__file__).parent


@dataclass(frozen=True)
class Spooled:
    """A JSON array in a scratch file (`path`), already made safe for a `<script>`
    element: `write_page` copies it in and removes the file."""

    path: str


def script_json(data: Any) -> str:
    """JSON that is safe inside a `<script>` element: `<`, `>` and `&` are written as
    `\\u003c`..., so no `</script>` or `<!--` in a tool name or result ends it early;
    U+2028 and U+2029 too, for older parsers. Written by `loopwatch._encode`: any
    name, any number."""
    from .._encode import json_bytes

    text = json_bytes(data).decode()
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def write_page(out: BinaryIO, head: dict[str, Any], sessions: Iterable[dict[str, Any]]) -> None:
    """The page to `out`: `head` is the page's facts (`title`, `excerpts`, ...: what
    `html.report_head` makes), `sessions` its rows, written one at a time as they come."""
    before, after = _frame(head.get("title") or "loopwatch report")
    out.write(before)
    facts = script_json(head)
    out.write(facts[:-1].encode("utf-8") + (b',"sessions":[' if facts != "{}" else b'"sessions":['))
    for number, row in enumerate(sessions):
        if number:
            out.write(b",")
        _write_row(out, row)
    out.write(b"]}")
    out.write(after)


def render(data: dict[str, Any]) -> str:
    """The page for `data` (`title`, `sessions`, ...: what `html.report_data` makes)."""
    buffer = io.BytesIO()
    write_page(buffer, {k: v for k, v in data.items() if k != "sessions"}, data.get("sessions") or [])
    return buffer.getvalue().decode("utf-8")


def _write_row(out: BinaryIO, row: dict[str, Any]) -> None:
    spooled = {key: value for key, value in row.items() if isinstance(value, Spooled)}
    if not spooled:
        out.write(script_json(row).encode("utf-8"))
        return
    rest = script_json({key: value for key, value in row.items() if key not in spooled})
    out.write(rest[:-1].encode("utf-8"))  # `{...` and the spooled arrays before its `}`
    for number, (key, value) in enumerate(spooled.items()):
        out.write(("," if number or rest != "{}" else "").encode() + script_json(key).encode() + b":")
        with open(value.path, "rb") as fh:  # a scratch file of ours, read once, then removed
            shutil.copyfileobj(fh, out, 1 << 20)
        os.unlink(value.path)
    out.write(b"}")


def _frame(title: str) -> tuple[bytes, bytes]:
    """The page's HTML before and after its data."""
    import jinja2
    from markupsafe import Markup

    from .._encode import text

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_HERE), autoescape=True, keep_trailing_newline=True)
    script = (_HERE / "page.js").read_text(encoding="utf-8")
    style = (_HERE / "page.css").read_text(encoding="utf-8")
    # Ours, not the user's data: inserted as they are (the data goes in the JSON blob).
    assert "</script" not in script.lower() and "</style" not in style.lower()
    mark = f"@@loopwatch-data-{secrets.token_hex(16)}@@"
    page = env.get_template("page.html.j2").render(
        title=text(title),
        nonce=secrets.token_urlsafe(18),
        script=Markup(script),
        style=Markup(style),
        data=Markup(mark),
    )
    before, middle, after = page.partition(mark)
    assert middle and mark not in after, "the data goes in one place"
    return before.encode("utf-8"), after.encode("utf-8")
