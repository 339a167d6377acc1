"""HAProxy (Debian's package) in front of the cluster's app hosts, and its runtime API.

One HTTP frontend on loopback balances round robin over the hosts, each checked with
``GET /health`` every half second (two failures take a host out, two successes bring it
back). A connection a host refuses is retried on another one (``option redispatch``); a
request already sent is never retried, since a write may have happened. Every answer names
the host that served it in ``X-Served-By``, so tests can show the load was spread.

TCP relays on the bridge's gateway address forward to Redis and to PostgreSQL (for the
read model's direct listening connections) on loopback: the hosts' namespaces cannot
reach the root namespace's loopback themselves.
"""

import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.support import HOST
from tests.support.gunicorn import kill_group

SERVED_BY = "X-Served-By"
BACKEND = "hosts"
CONFIG = """\
global
    maxconn 1024
    stats socket {socket} mode 600 level admin

defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    timeout check 1s
    retries 3
    option redispatch 1

frontend api
    bind {host}:{port}
    default_backend {backend}

backend {backend}
    balance roundrobin
    option httpchk
    http-check send meth GET uri /health ver HTTP/1.1 hdr Host {host}
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2
    http-response set-header {served_by} %s
{servers}

listen redis_relay
    mode tcp
    bind {relay}
    timeout client 1h
    timeout server 1h
    server redis {redis}

listen postgres_relay
    mode tcp
    bind {postgres_relay}
    timeout client 1h
    timeout server 1h
    server postgres {postgres}
"""


class HAProxy:
    """``haproxy -db`` with :data:`CONFIG` for ``servers`` (name -> ``address:port``)."""

    def __init__(
        self,
        workdir: Path,
        port: int,
        servers: dict[str, str],
        relay: str,
        redis: str,
        postgres_relay: str,
        postgres: str,
    ) -> None:
        self.workdir, self.port, self.servers = workdir, port, servers
        self.socket = workdir / "haproxy.sock"
        self.config = workdir / "haproxy.cfg"
        self.config.write_text(
            CONFIG.format(
                socket=self.socket,
                host=HOST,
                port=port,
                backend=BACKEND,
                served_by=SERVED_BY,
                servers="\n".join(
                    f"    server {name} {address} check" for name, address in servers.items()
                ),
                relay=relay,
                redis=redis,
                postgres_relay=postgres_relay,
                postgres=postgres,
            )
        )
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> "HAProxy":
        subprocess.run(["haproxy", "-c", "-q", "-f", str(self.config)], check=True, timeout=10)
        with open(self.workdir / "haproxy.log", "ab") as log:
            self.process = subprocess.Popen(
                ["haproxy", "-db", "-f", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.wait_until(lambda states: len(states) == len(self.servers), "to start")
        return self

    def log(self) -> str:
        """What HAProxy printed: its warnings name every server that went down, and why."""
        return (self.workdir / "haproxy.log").read_text(errors="replace")

    def command(self, line: str) -> str:
        """One command of HAProxy's runtime API (the stats socket); its answer."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def server_stats(self) -> dict[str, dict[str, str]]:
        """Each server's row of ``show stat`` (status, ``chkdown``, ``wredis``, ...)."""
        lines = self.command("show stat").splitlines()
        if not lines or not lines[0].startswith("# "):
            return {}
        columns = lines[0][2:].split(",")
        rows = [dict(zip(columns, line.split(","), strict=False)) for line in lines[1:] if line]
        return {
            row["svname"]: row
            for row in rows
            if row.get("pxname") == BACKEND and row["svname"] in self.servers
        }

    def states(self) -> dict[str, str]:
        """Each server's check state: ``UP``, ``DOWN``, ``MAINT``, ... (from ``show stat``)."""
        return {name: row["status"] for name, row in self.server_stats().items()}

    def wait_until(self, ready, what: str, timeout: float = 30) -> None:
        """Poll :meth:`states` until ``ready(states)``; raise after ``timeout`` seconds."""
        deadline, states = time.monotonic() + timeout, {}
        while time.monotonic() < deadline:
            try:
                states = self.states()
            except OSError:  # the socket is not there yet
                states = {}
            if ready(states):
                return
            time.sleep(0.1)
        raise RuntimeError(f"HAProxy's servers did not come {what} in {timeout} s: {states}")

    def only(self, names: list[str]) -> None:
        """Balance over ``names`` alone: the others go to maintenance (no traffic)."""
        for name in self.servers:
            verb = "enable" if name in names else "disable"
            self.command(f"{verb} server {BACKEND}/{name}")
        self.wait_until(
            lambda states: all(states.get(name) == "UP" for name in names), "up", timeout=10
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            kill_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill_group(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
