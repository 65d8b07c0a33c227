"""Recording Codex's trust in config.toml as text: the user's lines kept, our tables only,
refusal (and nothing written) where it cannot be done safely. The real Codex checks the
result in test_client_codex.py; these pin the editing itself."""

from __future__ import annotations

import tomllib

import pytest

from loopwatch._cli import codex_trust
from loopwatch._cli.codex_trust import Entry, TrustError

pytestmark = pytest.mark.slow

OURS = [
    Entry("PreToolUse", "/h/.codex/hooks.json:pre_tool_use:1:0", "sha256:" + "a" * 64),
    Entry("Stop", "/h/.codex/hooks.json:stop:0:0", "sha256:" + "b" * 64),
]
USER = """# my settings
model = "gpt-5"   # the one I like

[projects."/src/app"]
trust_level = "trusted"
"""


def _state(text: str) -> dict:
    return tomllib.loads(text)["hooks"]["state"]


def test_trust_appends_our_tables_and_keeps_every_user_line(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(USER)
    text = codex_trust.trust(config, OURS)
    assert text is not None and text.startswith(USER)
    assert {k: v["trusted_hash"] for k, v in _state(text).items()} == {e.key: e.hash for e in OURS}
    config.write_text(text)
    assert codex_trust.trust(config, OURS) is None  # already trusted: nothing to do
    assert codex_trust.untrust(config, OURS) == USER


def test_a_changed_hash_replaces_ours_and_keeps_the_users_other_keys(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(USER + f'\n[hooks.state."{OURS[0].key}"]\nenabled = true\ntrusted_hash = "sha256:old"\n')
    text = codex_trust.trust(config, OURS)
    assert text is not None
    state = _state(text)
    assert state[OURS[0].key] == {"enabled": True, "trusted_hash": OURS[0].hash}
    assert text.count(f'[hooks.state."{OURS[0].key}"]') == 1


def test_untrust_leaves_a_table_that_no_longer_holds_our_hash(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(USER + f'\n[hooks.state."{OURS[1].key}"]\ntrusted_hash = "sha256:someone-else"\n')
    assert codex_trust.untrust(config, OURS) is None


@pytest.mark.parametrize(
    "extra, why",
    [
        ('[hooks]\nstate = { "k" = { enabled = true } }\n', "yourself"),  # an inline table cannot be extended
        ("model = \n", "not valid TOML"),
    ],
)
def test_refused_when_it_cannot_be_done_safely(tmp_path, extra, why):
    config = tmp_path / "config.toml"
    config.write_text(USER + extra)
    with pytest.raises(TrustError, match=why):
        codex_trust.trust(config, OURS)


def test_write_keeps_the_mode_and_a_backup(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(USER)
    config.chmod(0o600)
    codex_trust.write(config, USER + "# more\n")
    assert config.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "config.toml.loopwatch.bak").read_text() == USER
    fresh = tmp_path / "new" / "config.toml"
    codex_trust.write(fresh, "x = 1\n")
    assert fresh.stat().st_mode & 0o777 == 0o600


# A user's config.toml as people write them: comments above and beside keys, odd spacing,
# unrelated tables, an array of tables, a `[hooks]` table of the user's own, no final blank line.
COMMENTED = """# Codex, my way
model = "gpt-5"          # the one I like
approval_policy="on-request"   # keep asking

[projects."/src/app"]   # my app
trust_level = "trusted"

  [mcp_servers.docs]
  command = "npx"
  args = ["-y", "docs-server"]   # pinned elsewhere

[[profiles.fast.tools]]
name = 'grep'

[hooks]
# my own setting under hooks
other = true
"""


@pytest.mark.parametrize("user_text", [USER, COMMENTED, ""], ids=["plain", "commented", "no-config"])
def test_install_and_uninstall_keep_the_users_config_byte_for_byte(tmp_path, monkeypatch, user_text):
    from click.testing import CliRunner

    from loopwatch._cli.install import install, uninstall

    home = tmp_path / "codex"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    config = home / "config.toml"
    if user_text:
        config.write_text(user_text)
    done = CliRunner().invoke(install, ["codex", "--command", "loopwatch hook --agent codex"])
    assert done.exit_code == 0, done.output
    installed = config.read_text()
    state = _state(installed)
    assert len(state) == 4 and all(v["trusted_hash"].startswith("sha256:") for v in state.values())
    assert installed.startswith(user_text)  # every line of the user's kept where it was, ours after
    after = tomllib.loads(installed)
    after["hooks"].pop("state")
    if not after["hooks"]:  # `hooks` held only ours
        del after["hooks"]
    assert after == tomllib.loads(user_text)  # nothing of the user's changed, the user's [hooks] kept
    done = CliRunner().invoke(uninstall, ["codex"])
    assert done.exit_code == 0, done.output
    assert config.read_text() == user_text
