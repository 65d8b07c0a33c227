"""One self-contained HTML page from the report's data: no file beside it, no request
made (its Content-Security-Policy forbids any), its script and style inline with a
fresh nonce, the data one JSON blob the script reads. Jinja2 renders it, autoescaping."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

__all__ = ["render", "script_json"]

_HERE = Path(__file__).parent


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


def render(data: dict[str, Any]) -> str:
    """The page for `data` (`title`, `sessions`, ...: what `html.report_data` makes)."""
    import jinja2
    from markupsafe import Markup

    from .._encode import text

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_HERE), autoescape=True, keep_trailing_newline=True)
    script = (_HERE / "page.js").read_text(encoding="utf-8")
    style = (_HERE / "page.css").read_text(encoding="utf-8")
    # Ours, not the user's data: inserted as they are (the data goes in the JSON blob).
    assert "</script" not in script.lower() and "</style" not in style.lower()
    return env.get_template("page.html.j2").render(
        title=text(data.get("title") or "loopwatch report"),
        nonce=secrets.token_urlsafe(18),
        script=Markup(script),
        style=Markup(style),
        data=Markup(script_json(data)),
    )
