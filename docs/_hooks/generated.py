"""The pages built from the project itself when the site is built (`mkdocs build`):
the command-line reference, rendered from each command's own `--help`, the project's
CONTRIBUTING, BENCHMARKS and CHANGELOG as they are in the repository, and the README's
table of hosts on the hosts' page (one table, kept in the README).
Nothing here is written to disk: the pages exist only in the built site."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
COPIED = {"contributing.md": "CONTRIBUTING.md", "benchmarks.md": "BENCHMARKS.md", "changelog.md": "CHANGELOG.md"}


def cli_reference() -> str:
    """Every command of `loopwatch` with its `--help`, as the command prints it (100 columns)."""
    from click.testing import CliRunner

    from loopwatch._cli import COMMANDS, cli

    def help_of(*args: str) -> str:
        done = CliRunner().invoke(cli, [*args, "--help"], prog_name="loopwatch", terminal_width=100)
        if done.exit_code != 0:
            raise RuntimeError(f"loopwatch {' '.join(args)} --help exited {done.exit_code}: {done.output}")
        return done.output.rstrip()

    parts = [
        "# Command line\n",
        "Generated when the site is built, from each command's own `--help`.\n",
        "```text\n$ loopwatch --help\n" + help_of() + "\n```\n",
    ]
    for name in COMMANDS:
        parts.append(f"## `loopwatch {name}`\n\n```text\n$ loopwatch {name} --help\n{help_of(name)}\n```\n")
    return "\n".join(parts)


#: Where a page shows the README's table of hosts and frameworks (kept in the README only).
TABLE_MARK = "<!-- the README's table of hosts and frameworks -->"


def readme_table() -> str:
    """The table under the README's "Guard your agent", its links made relative to `docs/hosts/`."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Guard your agent\n", 1)[1]
    rows = [line for line in section.split("\n## ", 1)[0].splitlines() if line.startswith("|")]
    return "\n".join(rows).replace("](docs/hosts/", "](").replace("](docs/", "](../")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if TABLE_MARK in markdown:
        if page.file.src_uri != "hosts/index.md":
            raise ValueError(f"{page.file.src_uri}: the README's table is shown on hosts/index.md only")
        markdown = markdown.replace(TABLE_MARK, readme_table())
    return markdown


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "cli.md", content=cli_reference()))
    for page, source in COPIED.items():
        files.append(File.generated(config, page, content=(ROOT / source).read_text(encoding="utf-8")))
    return files
