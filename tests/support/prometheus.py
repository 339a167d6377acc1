"""Debian's ``prometheus`` on a free loopback port, scraping one target, and its HTTP API.

Used by tests/test_metrics_live.py. Its data lives in a directory of the run's; the server
is stopped (and its process group with it) by :meth:`Prometheus.stop`.
"""

import json
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.support import HOST
from tests.support.gunicorn import free_port, kill_group

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Prometheus:
    """Scrapes ``http://<target><metrics_path>`` every ``interval`` seconds."""

    def __init__(self, directory: Path, target: str, interval: float = 0.5) -> None:
        self.directory, self.target, self.interval = directory, target, interval
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 30) -> "Prometheus":
        config = self.directory / "prometheus.yml"
        # JSON is YAML: one scrape job, its timeout no longer than its interval.
        every = f"{int(self.interval * 1000)}ms"
        config.write_text(
            json.dumps(
                {
                    "global": {"scrape_interval": every, "scrape_timeout": every},
                    "scrape_configs": [
                        {"job_name": "site", "static_configs": [{"targets": [self.target]}]}
                    ],
                }
            )
        )
        self.port = free_port()
        with (self.directory / "prometheus.log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={self.directory / 'data'}",
                    f"--web.listen-address={HOST}:{self.port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with _NO_PROXY.open(f"{self.base_url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"prometheus did not start:\n{self.log()[-3000:]}")

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's ``result`` (``at``: a Unix time, default now)."""
        params = {"query": promql} | ({} if at is None else {"time": f"{at:.3f}"})
        url = f"{self.base_url}/api/v1/query?{urllib.parse.urlencode(params)}"
        with _NO_PROXY.open(url, timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            kill_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill_group(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)

    def log(self) -> str:
        path = self.directory / "prometheus.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def __enter__(self) -> "Prometheus":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
