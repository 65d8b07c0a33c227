"""A local Ray for the engine tests, started so that a busy machine cannot fail it, and
what a Ray on this machine listens on.

The Ray is started as loopwatch starts one (`ray_engine.start_local`: on the loopback
interface only). Ray gives its raylet a fixed 30 s to register at start-up; on a machine
whose cores are all busy that can pass, and `ray.init` raises. That is the test
machine's load, not loopwatch's behaviour, so a start-up that timed out is tried again
(after a shutdown), a few times; any other error is raised at once."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager

STARTS = 4


@contextmanager
def local_ray(num_cpus: int = 2) -> Iterator[None]:
    import ray

    from loopwatch._analysis.ray_engine import start_local

    for attempt in range(1, STARTS + 1):
        try:
            start_local(num_cpus=num_cpus)
            break
        except Exception as error:  # Ray raises a bare Exception for this
            ray.shutdown()
            if "timed out during startup" not in str(error) or attempt == STARTS:
                raise
    try:
        yield
    finally:
        ray.shutdown()


# -- what a Ray on this machine listens on ------------------------------------------------------


def family_of(pid: int) -> list[int]:
    """`pid` and every process started under it (Ray's GCS, raylet, agents and workers
    are all descendants of the driver that started them)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(entry))
    family = [pid]
    for member in family:
        family.extend(children.get(member, []))
    return family


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net prints it: hex, each 32-bit word in host (little-endian) order."""
    raw = b"".join(int(text[i : i + 8], 16).to_bytes(4, "little") for i in range(0, len(text), 8))
    return ipaddress.ip_address(raw)


def listening(pids: list[int]) -> list[tuple[str, str, int, str]]:
    """Every socket of these processes that anyone could reach: (protocol, address, port,
    process name) for each TCP socket listening and each UDP socket bound and unconnected."""
    inodes: dict[str, int] = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes[target[len("socket:[") : -1]] = pid
        except OSError:
            continue  # gone meanwhile, or a descriptor closed as it was read
    found = []
    for proto, reachable in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        with open(f"/proc/net/{proto}") as fh:
            for line in fh.read().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if inode in inodes and state == reachable:
                    host, port = local.rsplit(":", 1)
                    with open(f"/proc/{inodes[inode]}/comm") as comm:
                        name = comm.read().strip()
                    found.append((proto, str(_address(host)), int(port, 16), name))
    return found


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback
