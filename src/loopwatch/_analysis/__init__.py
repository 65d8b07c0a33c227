"""Measuring the detector on recorded sessions: `replay` (a file through a monitor, as
`scan` does), `evaluation` (recall, delay, saved steps, and harm on sessions that
succeeded), `crossval` (thresholds chosen on some folds, scored on the rest) and
`outcomes` (which sessions solved their task, from manifests and results files).

It uses the core, the readers and the hosts' shapes, never a front end (the CLI, the
hook, the supervisor, the adapters): `tests/test_layering.py` checks it.
"""
