"""The pure loop detector: events in, verdicts out.

`events` (what an agent did and got back), `fingerprint` and `step` (digests of calls and
results), `text` and `lines` (model text and console lines as digests), `signals/` (one
file per kind of circling), `finding` and `messages` (what a signal concluded, and its
wording), `policy` (the ladder from a finding to a nudge, a block or a stop), `monitor`
(all of it, one event at a time), `config` (validated settings) and `calibrations`
(measured settings per recorded source), `record` (a run's JSON record).

It reads no environment, no clock and no file, and imports nothing of loopwatch outside
this package (`tests/test_layering.py` checks it): times come in with the events, and
whoever reads the environment or a configuration file (`loopwatch._configfile`, the CLI,
the hook) passes the result in. Its public names are re-exported by `loopwatch`.
"""
