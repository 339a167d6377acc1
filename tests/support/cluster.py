"""The cluster: three app hosts behind HAProxy, on PgBouncer and Redis, started and torn
down in one place (``make cluster-test``, tests/cluster/).

- each host is a network namespace (:mod:`tests.support.netns`) running the example
  project under gunicorn at ``10.213.77.1N:8000``;
- HAProxy on loopback balances over them (:mod:`tests.support.haproxy`) and relays Redis;
- PgBouncer in transaction mode on the gateway address fronts the machine's PostgreSQL,
  database :data:`DATABASE` made anew; the hosts use it with the settings
  docs/deployment.md gives (:data:`PGBOUNCER_OPTIONS`);
- Redis database :data:`REDIS_DB`, keys under a prefix of the run, is the hosts' shared
  cache, which counts throttling.

Needs root (namespaces), ``haproxy`` and ``pgbouncer`` on PATH, PostgreSQL and Redis on
loopback. :meth:`Cluster.stop` kills every process, deletes the namespaces, drops the
database and the run's Redis keys; it runs at exit too, so a crashed run leaves nothing.
"""

import atexit
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support import HOST
from tests.support.deployment import manage, server_env
from tests.support.gunicorn import Gunicorn, free_port
from tests.support.haproxy import SERVED_BY, HAProxy
from tests.support.http import API_PATH, exchange
from tests.support.netns import GATEWAY, Network
from tests.support.pgbouncer import PgBouncer
from tests.support.postgres import ADDRESS, drop_database, recreate_database

DATABASE = "h_g_cluster"
WORKSPACE = "cluster"
REDIS = "127.0.0.1:6379"
REDIS_DB = 7
HOST_PORT = 8000
WORKERS = 2  # per host: 3 hosts x 2 sync workers on a 2-core machine
# Behind PgBouncer in transaction mode: no server-side cursor may outlive a transaction,
# and psycopg may prepare nothing (Debian's PgBouncer 1.18 cannot keep its statements):
# Django's backend prepares none (prepare_threshold None), and the app prepares nothing.
# CONN_MAX_AGE keeps the cheap client connection.
PGBOUNCER_OPTIONS = "disable_server_side_cursors=True"


class Cluster:
    def __init__(self, hosts: int = 3, workers: int = WORKERS) -> None:
        self.suffix = uuid.uuid4().hex[:6]
        self.workdir = Path(tempfile.mkdtemp(prefix=f"usergroups-cluster-{self.suffix}-"))
        self.network = Network(self.suffix, hosts)
        self.workers = workers
        self.key_prefix = f"ugcluster-{self.suffix}"
        self.hosts: list[Gunicorn] = []
        self.pgbouncer: PgBouncer | None = None
        self.haproxy: HAProxy | None = None
        self.key = ""
        self.relay = f"{GATEWAY}:{free_port()}"
        self.postgres_relay = f"{GATEWAY}:{free_port()}"
        self._stopped = False

    @property
    def names(self) -> list[str]:
        return [f"h{index + 1}" for index in range(self.network.count)]

    @property
    def base_url(self) -> str:
        assert self.haproxy is not None
        return self.haproxy.base_url

    @property
    def address(self) -> tuple[str, int]:
        assert self.haproxy is not None
        return HOST, self.haproxy.port

    def call(
        self, method: str, body: dict | None, path: str = API_PATH, authorization: str = ""
    ) -> tuple[int, Any, str]:
        """One request through HAProxy: ``(status, decoded answer, host that served it)``."""
        status, payload, headers = exchange(
            self.base_url, method, body, authorization or f"Token {self.key}", path=path
        )
        return status, payload, headers.get(SERVED_BY, "")

    def call_host(
        self,
        index: int,
        method: str,
        body: dict | None,
        path: str = API_PATH,
        authorization: str = "",
    ) -> tuple[int, Any]:
        """One request to host ``index`` itself, past HAProxy: ``(status, decoded answer)``."""
        base_url = f"http://{self.network.address(index)}:{HOST_PORT}"
        status, payload, _ = exchange(
            base_url, method, body, authorization or f"Token {self.key}", path=path
        )
        return status, payload

    def database_url(self) -> str:
        assert self.pgbouncer is not None
        return f"{self.pgbouncer.url(DATABASE)}?{PGBOUNCER_OPTIONS}"

    def host_env(self, index: int, **overrides: str) -> dict[str, str]:
        return server_env(
            self.database_url(),
            DJANGO_ALLOWED_HOSTS=f"{HOST},{self.network.address(index)}",
            DJANGO_CACHE_URL=f"redis://{self.relay}/{REDIS_DB}?key_prefix={self.key_prefix}",
            # The read model listens past PgBouncer, directly (docs/deployment.md).
            DATABASE_LISTEN_URL=f"postgres://postgres@{self.postgres_relay}/{DATABASE}",
            **overrides,
        )

    def start(self) -> "Cluster":
        atexit.register(self.stop)
        recreate_database(DATABASE)
        self.network.create()
        self.pgbouncer = PgBouncer(
            self.workdir, DATABASE, f"{GATEWAY},{HOST}", free_port(), ADDRESS
        ).start()
        env = self.host_env(0)
        manage(env, "migrate", "--noinput", timeout=180)
        self.key = manage(env, "create_api_key", "--workspace", WORKSPACE).strip()
        servers = {
            name: f"{self.network.address(i)}:{HOST_PORT}" for i, name in enumerate(self.names)
        }
        self.haproxy = HAProxy(
            self.workdir,
            free_port(),
            servers,
            self.relay,
            REDIS,
            self.postgres_relay,
            f"{ADDRESS[0]}:{ADDRESS[1]}",
        ).start()
        self.hosts = [self._gunicorn(index) for index in range(self.network.count)]
        self.start_hosts()
        self.settle_rotation()
        return self

    def _gunicorn(self, index: int, **overrides: str) -> Gunicorn:
        return Gunicorn(
            self.host_env(index, **overrides),
            self.workdir / f"{self.names[index]}.log",
            self.workers,
            "--max-requests",
            "0",
            host=self.network.address(index),
            port=HOST_PORT,
            launcher=self.network.launcher(index),
        )

    def start_hosts(self, indexes: list[int] | None = None) -> None:
        """Start hosts (all by default) side by side; wait until HAProxy sees them up."""
        indexes = list(range(len(self.hosts))) if indexes is None else indexes
        errors: list[BaseException] = []

        def start(index: int) -> None:
            try:
                self.hosts[index].start(timeout=60)
            except BaseException as error:  # raised below, in the caller's thread
                errors.append(error)

        threads = [threading.Thread(target=start, args=(i,)) for i in indexes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
        if errors:
            raise errors[0]
        assert self.haproxy is not None
        names = [self.names[i] for i in indexes]
        self.haproxy.wait_until(lambda states: all(states.get(n) == "UP" for n in names), "up")

    def wait_until_down(self, indexes: list[int]) -> None:
        """Until HAProxy's checks have seen the stopped hosts go, so that waiting for them
        to be up again means what it says."""
        assert self.haproxy is not None
        names = [self.names[i] for i in indexes]
        self.haproxy.wait_until(
            lambda states: all(states.get(n, "").startswith("DOWN") for n in names), "down"
        )

    def restart_hosts(self, **overrides: str) -> None:
        """Every host anew with ``overrides`` in its environment (none: the defaults)."""
        for host in self.hosts:
            host.stop()
        self.wait_until_down(list(range(len(self.hosts))))
        self.hosts = [self._gunicorn(i, **overrides) for i in range(len(self.hosts))]
        self.start_hosts()
        self.settle_rotation()

    def settle_rotation(self, limit: int = 300) -> None:
        """Health checks through HAProxy until its round robin passes every host in turn,
        twice. Hosts come up at different moments, and the rotation first evens out their
        past: the host up first, alone, is skipped for a while (13/13/4 over 30 gets, 0
        of 20 throttled requests), which is not what the next test means to measure."""
        names, served = sorted(self.names), []
        for _ in range(limit):
            _, _, headers = exchange(self.base_url, "GET", None, "", path="/health")
            served = [*served, headers.get(SERVED_BY, "")][-2 * len(names) :]
            if sorted(served) == sorted(names * 2):
                return
        raise RuntimeError(f"HAProxy's rotation did not settle in {limit} requests: {served}")

    def new_key(self) -> str:
        """Another API key of the workspace (all scopes), made as a deployment would."""
        return manage(self.host_env(0), "create_api_key", "--workspace", WORKSPACE).strip()

    def kill_master(self, index: int) -> None:
        """kill -9 of host ``index``'s gunicorn master; then, as a service manager does
        when it restarts a unit whose main process died, its orphaned workers."""
        host = self.hosts[index]
        assert host.process is not None
        os.kill(host.process.pid, signal.SIGKILL)
        host.process.wait(timeout=10)
        time.sleep(0.5)  # the workers serve on meanwhile, and finish requests in flight
        host.stop()
        self.wait_until_down([index])

    def bring_back(self, index: int) -> None:
        self.hosts[index] = self._gunicorn(index)
        self.start_hosts([index])

    def stop(self, keep_logs: bool = False) -> None:
        """Tear everything down; the work directory (configs, logs) goes too unless
        ``keep_logs``."""
        if self._stopped:
            return
        self._stopped = True
        for step in (
            lambda: self.haproxy and self.haproxy.stop(),
            *[host.stop for host in self.hosts],
            lambda: self.pgbouncer and self.pgbouncer.stop(),
            self.network.delete,
            lambda: drop_database(DATABASE),
            self._forget_cache,
            lambda: keep_logs or shutil.rmtree(self.workdir, ignore_errors=True),
        ):
            try:
                step()
            except Exception as error:  # the other steps still run
                print(f"cluster teardown: {error!r}")

    def _forget_cache(self) -> None:
        import redis

        client = redis.Redis.from_url(f"redis://{REDIS}/{REDIS_DB}", socket_timeout=5)
        with client:
            keys = list(client.scan_iter(match=f"{self.key_prefix}:*", count=1000))
            if keys:
                client.delete(*keys)
