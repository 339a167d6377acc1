"""A Django project under gunicorn on a free loopback port: the one server harness.

Used by the live tests (tests/test_fuzz.py, tests/test_multiworker.py), the fault test
(.ci/fault_test.py) and the benchmark (bench/run.py). The project runs as deployed, in
the environment given (see :mod:`tests.support.deployment`), with sync workers.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.support import HOST, ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _no_control_socket() -> list[str]:
    """gunicorn >= 25 opens a control socket at one path per user (~/.gunicorn), which
    servers running side by side would take from one another; these need none."""
    from gunicorn import config

    names = {setting.name for setting in config.KNOWN_SETTINGS}
    return ["--no-control-socket"] if "control_socket_disable" in names else []


# Servers are on loopback or in namespaces of this machine: never through a proxy.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:  # nothing left in it
        pass


class Gunicorn:
    """``gunicorn APP`` with ``workers`` sync workers on a free loopback port, its output
    appended to ``log_path``; ``extra_args`` go to gunicorn as given.

    The cluster (tests/support/cluster.py) runs one in each network namespace: there
    ``launcher`` (``ip netns exec NAME``, which execs, so the process is gunicorn's master)
    starts it, bound to the namespace's ``host`` on a fixed ``port``."""

    def __init__(
        self,
        env: dict[str, str],
        log_path: Path,
        workers: int,
        *extra_args: str,
        app: str = "example_project.wsgi",
        host: str = HOST,
        port: int = 0,
        launcher: tuple[str, ...] = (),
    ) -> None:
        self.env, self.log_path, self.workers, self.extra_args = env, log_path, workers, extra_args
        self.app, self.host, self.fixed_port, self.launcher = app, host, port, launcher
        self.process: subprocess.Popen[bytes] | None = None
        self.port = port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 40) -> "Gunicorn":
        log = open(self.log_path, "ab")
        try:
            for _attempt in range(3):  # the port may be taken between free_port() and bind
                self.port = self.fixed_port or free_port()
                self.process = subprocess.Popen(
                    [
                        *self.launcher,
                        sys.executable,
                        "-m",
                        "gunicorn",
                        self.app,
                        "--workers",
                        str(self.workers),
                        "--worker-class",
                        "sync",
                        "--bind",
                        f"{self.host}:{self.port}",
                        "--timeout",
                        "30",
                        "--graceful-timeout",
                        "2",
                        *_no_control_socket(),
                        *self.extra_args,
                    ],
                    cwd=ROOT,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                if self._wait_until_serving(timeout):
                    return self
                self.stop()
        finally:
            log.close()
        raise RuntimeError(f"gunicorn did not start:\n{self.log()[-3000:]}")

    def _running(self) -> subprocess.Popen[bytes]:
        if self.process is None:
            raise RuntimeError("gunicorn was not started")
        return self.process

    def _wait_until_serving(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._running().poll() is not None:
                return False
            try:
                # Any HTTP answer (401 without a key) means a worker is serving.
                _NO_PROXY.open(f"{self.base_url}/api/user", timeout=5)
            except urllib.error.HTTPError:
                return True
            except OSError:
                time.sleep(0.1)
                continue
            return True
        return False

    def worker_pids(self) -> list[int]:
        """The master's children: the processes whose parent it is, read from /proc."""
        master, pids = self._running().pid, []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:  # gone meanwhile
                continue
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            fields = text[text.rindex(")") + 2 :].split()
            if int(fields[1]) == master:
                pids.append(int(stat.parent.name))
        return sorted(pids)

    def stop(self) -> None:
        process = self.process
        if process is None:
            return
        if process.poll() is not None:
            # The master is gone (killed): its workers may live on in its process group.
            kill_group(process.pid, signal.SIGKILL)
            return
        kill_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def __enter__(self) -> "Gunicorn":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
