"""Network namespaces joined by a bridge in the root namespace: the cluster's app hosts.

Each host is a namespace with one veth pair, its outer end on a bridge that holds the
gateway address. Everything a host reaches (PgBouncer, the Redis relay) listens on that
gateway address, and HAProxy in the root namespace reaches the hosts on theirs: no
traffic leaves the machine, and the namespaces have no route elsewhere.

Names carry a run-specific suffix, so two runs never take each other's interfaces; the
teardown deletes what this run made, and is safe to call twice (pytest's finalizer and
atexit both call it).
"""

import subprocess
from dataclasses import dataclass, field

SUBNET = "10.213.77"  # a private /24 nothing on this machine uses
GATEWAY = f"{SUBNET}.1"
PREFIX = 24
COMMAND_TIMEOUT = 10


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``ip ARGS``, bounded in time; raises with ip's message when it fails and ``check``."""
    done = subprocess.run(
        ["ip", *args], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


@dataclass
class Network:
    """A bridge at :data:`GATEWAY` and ``count`` namespaces at ``.11``, ``.12``, ..."""

    suffix: str  # a few characters unique to the run: interface names are at most 15 long
    count: int
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # root-side interfaces, the bridge last

    @property
    def bridge(self) -> str:
        return f"ugbr{self.suffix}"

    def address(self, index: int) -> str:
        return f"{SUBNET}.{11 + index}"

    def launcher(self, index: int) -> tuple[str, ...]:
        """The command prefix that runs a program inside host ``index``'s namespace."""
        return ("ip", "netns", "exec", self.namespaces[index])

    def create(self) -> "Network":
        ip("link", "add", self.bridge, "type", "bridge")
        self.links.append(self.bridge)
        ip("addr", "add", f"{GATEWAY}/{PREFIX}", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for index in range(self.count):
            self._add_host(index)
        return self

    def _add_host(self, index: int) -> None:
        namespace, outer, inner = (
            f"ugh{index}-{self.suffix}",
            f"ugv{index}{self.suffix}",
            f"ugi{index}{self.suffix}",
        )
        ip("netns", "add", namespace)
        self.namespaces.append(namespace)
        ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        self.links.insert(0, outer)
        ip("link", "set", outer, "master", self.bridge)
        ip("link", "set", outer, "up")
        ip("link", "set", inner, "netns", namespace)
        inside = ("netns", "exec", namespace, "ip")
        ip(*inside, "addr", "add", f"{self.address(index)}/{PREFIX}", "dev", inner)
        ip(*inside, "link", "set", inner, "up")
        ip(*inside, "link", "set", "lo", "up")

    def delete(self) -> None:
        """Remove every link and namespace this run made (a veth goes with either end)."""
        while self.links:
            ip("link", "del", self.links.pop(0), check=False)
        while self.namespaces:
            ip("netns", "del", self.namespaces.pop(), check=False)
