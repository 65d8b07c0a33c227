"""What loopwatch knows about each agent host (Claude Code, Codex): one module per host, standard library only."""
