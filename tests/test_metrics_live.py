"""The example project's metrics end to end: gunicorn with 2 workers and
``DJANGO_METRICS=true`` on SQLite, Debian's Prometheus scraping its ``/metrics``, and
Prometheus's API answering how many embed tokens were verified, whichever worker
verified them."""

import threading
import time
from pathlib import Path

import pytest
from prometheus_client.multiprocess import MultiProcessCollector

from tests.support.deployment import migrated_site
from tests.support.gunicorn import Gunicorn
from tests.support.http import call_api, exchange
from tests.support.prometheus import Prometheus

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.needs("prometheus")]

VERIFICATIONS = "usergroups_embed_verifications_total"
DATA_PATH = "/embed/api/sales/"
TIMEOUT = 30


def verify(base_url: str, token: str) -> int:
    """One request to the example's embed data view; its status."""
    status, _body, _headers = exchange(base_url, "GET", None, f"Embed {token}", path=DATA_PATH)
    return status


def counted_per_worker(directory: Path, pids: list[int]) -> dict[int, float]:
    """Verifications each worker wrote into its own file of the multiprocess directory."""
    counted = {}
    for pid in pids:
        path = directory / f"counter_{pid}.db"
        families = MultiProcessCollector.merge([str(path)]) if path.exists() else []
        counted[pid] = sum(
            sample.value
            for family in families
            for sample in family.samples
            if sample.name == VERIFICATIONS
        )
    return counted


def until(condition, what: str):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {TIMEOUT} s: {what}")


def test_prometheus_counts_every_workers_verifications(tmp_path):
    env, key = migrated_site(f"sqlite:///{tmp_path / 'db.sqlite3'}", "metrics")
    multiproc = tmp_path / "multiproc"
    multiproc.mkdir()
    env.update(
        DJANGO_METRICS="true",
        PROMETHEUS_MULTIPROC_DIR=str(multiproc),
        DJANGO_METRICS_INTERVAL_SECONDS="0.2",
    )
    config = ("-c", "example_project/gunicorn.conf.py")
    with Gunicorn(env, tmp_path / "gunicorn.log", 2, *config) as site:
        host_port = site.base_url.removeprefix("http://")
        with Prometheus(tmp_path, host_port, interval=0.5) as prometheus:
            status, _ = call_api(site.base_url, key, "GET", {"user_group_id": "acme"})
            assert status in (200, 201)
            status, body = call_api(
                site.base_url, key, "POST", {"user_group_id": "acme"}, path="/api/user/embed-token"
            )
            assert status == 200, body
            token = body["embed_token"]

            def total() -> float | None:
                result = prometheus.query(f"sum({VERIFICATIONS})")
                return float(result[0]["value"][1]) if result else None

            # Both series scraped before the burst: increase() counts from their first sample.
            assert verify(site.base_url, token) != 401
            assert verify(site.base_url, "not-a-token") == 401
            until(lambda: total() == 2, "the first two verifications scraped")

            # The burst, from concurrent clients until both workers have verified some.
            sent = {"verified": 0, "refused": 0}
            lock = threading.Lock()

            def client(index: int) -> None:
                refused = index % 3 == 0
                status = verify(site.base_url, "not-a-token" if refused else token)
                assert (status == 401) == refused, status
                with lock:
                    sent["refused" if refused else "verified"] += 1

            for _round in range(10):
                threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(TIMEOUT)
                per_worker = until(
                    lambda: (
                        (found := counted_per_worker(multiproc, site.worker_pids()))
                        and sum(found.values()) == 2 + sum(sent.values())
                        and found
                    ),
                    "every worker's file written",
                )
                if all(per_worker.values()):
                    break
            assert len(per_worker) == 2 and all(per_worker.values()), per_worker
            burst = sum(sent.values())
            until(lambda: total() == 2 + burst, "the burst scraped")

            # The last scrape before the burst and the first after it: a window between
            # two scrapes, so increase() extrapolates nothing and is exact.
            raw = prometheus.query(f"{VERIFICATIONS}[2m]")
            scrapes = sorted({float(t) for series in raw for t, _ in series["values"]})
            totals = {
                at: sum(float(v) for series in raw for t, v in series["values"] if float(t) == at)
                for at in scrapes
            }
            before = max(at for at in scrapes if totals[at] == 2)
            after = min(at for at in scrapes if totals[at] == 2 + burst)
            window = f"{round((after - before) * 1000)}ms"
            increase = prometheus.query(f"sum(increase({VERIFICATIONS}[{window}]))", at=after)
            assert float(increase[0]["value"][1]) == burst
            by_outcome = prometheus.query(
                f"sum by (usergroups_outcome) (increase({VERIFICATIONS}[{window}]))", at=after
            )
            assert {
                r["metric"]["usergroups_outcome"]: float(r["value"][1]) for r in by_outcome
            } == {
                "accepted": sent["verified"],
                "refused": sent["refused"],
            }
            refused = prometheus.query(f'{VERIFICATIONS}{{usergroups_outcome="refused"}}')
            assert [r["metric"]["usergroups_refusal_code"] for r in refused] == [
                "authentication_failed"
            ]
    assert "Traceback" not in site.log(), site.log()[-5000:]
