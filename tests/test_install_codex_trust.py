"""Recording Codex's trust in config.toml as text: the user's lines kept, our tables only,
refusal (and nothing written) where it cannot be done safely. The real Codex checks the
result in test_client_codex.py; these pin the editing itself."""

from __future__ import annotations

import tomllib

import pytest

from loopwatch.cli import codex_trust
from loopwatch.cli.codex_trust import Entry, TrustError

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
