"""A local Ray for the engine tests, started so that a busy machine cannot fail it.

Ray gives its raylet a fixed 30 s to register at start-up; on a machine whose cores are
all busy that can pass, and `ray.init` raises. That is the test machine's load, not
loopwatch's behaviour, so a start-up that timed out is tried again (after a shutdown),
a few times; any other error is raised at once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

STARTS = 4


@contextmanager
def local_ray(num_cpus: int = 2) -> Iterator[None]:
    import ray

    for attempt in range(1, STARTS + 1):
        try:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
            break
        except Exception as error:  # Ray raises a bare Exception for this
            ray.shutdown()
            if "timed out during startup" not in str(error) or attempt == STARTS:
                raise
    try:
        yield
    finally:
        ray.shutdown()
