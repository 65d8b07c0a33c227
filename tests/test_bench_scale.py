"""`bench/scale.py` reports each process's own peak memory, not the memory of the process it was started from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc (Linux)")


def test_a_peak_is_the_process_own_not_its_parents():
    held = bytearray(96 * 2**20)
    held[::4096] = b"\1" * len(held[::4096])  # touched, so resident here when the child starts
    code = (
        "import resource, sys; sys.path.insert(0, sys.argv[1]); import scale;"
        "print(scale.own_peak_kib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(BENCH)], capture_output=True, text=True, check=True)
    own, inherited = map(int, out.stdout.split())
    if inherited < 96 * 1024:
        pytest.skip("this system does not carry the parent's high-water mark into ru_maxrss")
    assert own < 64 * 1024, own  # a bare interpreter with the bench module imported: about 13 MiB
    del held
