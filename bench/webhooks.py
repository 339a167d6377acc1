"""The webhook step: one ``manage.py db_worker`` delivers the events of mints made through
the app's API to a receiver on loopback in this process (tests/support's, answering 204).

A burst of mints from ``--connections`` clients gives the throughput: distinct events
delivered over the time from the first event's commit (its ``at``) to the last arrival;
a steady run (``STEADY_RATE`` mints a second, or half the burst's throughput if that is
less) gives the lag, arrival minus the event's ``at``, which a burst fills with queueing.
Then the lag beside receivers that hang (issue 33): ``HANGING_RECEIVERS`` webhooks to
loopback sockets that accept and never answer, registered before the healthy one (each
event's deliveries to them are enqueued first), the same one worker, ``HANGING_EVENTS``
mints ``HANGING_RATE`` a second, the settings' default timeouts. Every request received
is checked with ``standardwebhooks``, so only real, signed deliveries count.
"""

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Protocol

from standardwebhooks import Webhook as Verifier

from bench import OUT, log
from bench.workload import MINT_BODY
from tests.support import ROOT
from tests.support.webhook_receiver import (
    Received,
    Receiver,
    hanging_receiver,
    running_receiver,
)

if TYPE_CHECKING:
    from bench.scenarios import Results


class Server(Protocol):
    """What the step needs of bench/driving.py's server (named here: driving imports this)."""

    env: dict[str, str]
    backend: str

    def call(
        self, method: str, path: str, secret: str, body: dict[str, Any] | None
    ) -> dict[str, Any]: ...


MINT = "/api/user/embed-token"
STEADY_RATE = 50  # mints a second, at most
HANGING_RECEIVERS = 6
HANGING_EVENTS = 60
HANGING_RATE = 2  # mints a second
# The worker's poll when its queue is empty (db_worker's default is 1 s, which would be
# most of the lag): stated in bench/RESULTS.md.
WORKER_INTERVAL = 0.1


class Worker:
    """``manage.py db_worker`` on the server's database, its output in bench/out."""

    def __init__(self, server: Server) -> None:
        self.env, self.backend = server.env, server.backend
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> "Worker":
        args = ["--interval", str(WORKER_INTERVAL), "--no-startup-delay", "--no-reload"]
        with (OUT / f"worker-{self.backend}.log").open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "db_worker", *args, "--verbosity", "0"],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)


def mint(server: Server) -> None:
    server.call("POST", MINT, "api_key", MINT_BODY)


def delivered(receiver: Receiver, since: int, events: int, timeout: float) -> list[Received]:
    """The requests received after the first ``since``, once ``events`` distinct events
    are among them (or ``timeout`` seconds have passed)."""
    deadline = time.monotonic() + timeout
    while True:
        got = receiver.answered()[since:]
        # One webhook: one webhook-id (a delivery) per event, the same on its copies.
        if len({r.headers["webhook-id"] for r in got}) >= events or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def figures(got: list[Received], made: int, made_seconds: float, secret: str) -> dict[str, float]:
    """Throughput and lag of the requests ``got`` for ``made`` events, each verified."""
    verifier = Verifier(secret)
    first: dict[str, tuple[float, float]] = {}  # event id -> (first arrival, its at)
    for request in got:
        verifier.verify(request.body, request.headers)  # raises on a bad signature
        event = json.loads(request.body)["data"]
        if event["id"] not in first or request.at < first[event["id"]][0]:
            at = datetime.datetime.fromisoformat(event["at"]).timestamp()
            first[event["id"]] = (request.at, at)
    if not first:
        raise RuntimeError("no event delivered; see bench/out/worker-*.log")
    arrivals = [arrived for arrived, _at in first.values()]
    lags = sorted((arrived - at) * 1000 for arrived, at in first.values())
    percentiles = statistics.quantiles(lags, n=100, method="inclusive") if len(lags) > 1 else lags
    return {
        "events": made,
        "delivered": len(first),
        "copies": len(got) - len(first),
        "made_per_s": made / made_seconds,
        "per_s": len(first) / (max(arrivals) - min(at for _arrived, at in first.values())),
        "p50_ms": statistics.median(lags),
        "p99_ms": percentiles[-1],
    }


def register(server: Server, url: str) -> dict[str, Any]:
    """A webhook for mints, through the API: its id and secret."""
    return server.call(
        "POST",
        "/api/user/webhook",
        "api_key",
        {"url": url, "events": ["embed_token.minted"], "description": "bench"},
    )["webhook"]


def delete(server: Server, hook: dict[str, Any]) -> None:
    server.call("DELETE", "/api/user/webhook", "api_key", {"webhook_id": hook["webhook_id"]})


def measure_webhooks(server: Server, args: argparse.Namespace, results: "Results") -> None:
    """Register a webhook for mints, run the burst and the steady run, delete it; then
    the run beside receivers that hang."""
    with Worker(server):
        measure_throughput(server, args, results)
        measure_beside_hanging(server, results)


def measure_beside_hanging(server: Server, results: "Results") -> None:
    """A healthy receiver's lag while ``HANGING_RECEIVERS`` others hang, one worker."""
    with ExitStack() as stack:
        hanging = [stack.enter_context(hanging_receiver()) for _ in range(HANGING_RECEIVERS)]
        receiver = stack.enter_context(running_receiver())
        hooks = [register(server, r.url) for r in hanging] + [register(server, receiver.url)]
        for hook in hooks:
            stack.callback(delete, server, hook)
        started = time.monotonic()
        for number in range(HANGING_EVENTS):  # on time, however long a mint takes
            time.sleep(max(0.0, started + number / HANGING_RATE - time.monotonic()))
            mint(server)
        made_seconds = time.monotonic() - started
        got = delivered(receiver, 0, HANGING_EVENTS, timeout=60)
        result = figures(got, HANGING_EVENTS, made_seconds, hooks[-1]["secret"])
        result["hanging"] = HANGING_RECEIVERS
        result["rate"] = HANGING_RATE
        result["held"] = sum(r.connections() for r in hanging)
    results.webhooks[(server.backend, "hanging")] = result
    if result["delivered"] < HANGING_EVENTS:
        results.notes.append(
            f"{server.backend} webhooks beside {HANGING_RECEIVERS} hanging: "
            f"{result['delivered']} of {HANGING_EVENTS} events delivered"
        )
    log(
        f"{server.backend} webhooks beside {HANGING_RECEIVERS} hanging, one worker: "
        f"{result['delivered']} of {HANGING_EVENTS} events, lag p50 {result['p50_ms']:7.1f} ms"
        f"  p99 {result['p99_ms']:7.1f} ms; {result['held']} connections to the hanging ones"
    )


def measure_throughput(server: Server, args: argparse.Namespace, results: "Results") -> None:
    """The burst and the steady run, to one webhook."""
    with running_receiver() as receiver:
        hook = register(server, receiver.url)
        try:
            mint(server)  # the worker is up and delivering before anything is timed
            if not delivered(receiver, 0, 1, timeout=60):
                raise RuntimeError(
                    f"no delivery in 60 s; see bench/out/worker-{server.backend}.log"
                )
            runs = {"burst": args.webhook_events, "steady": args.webhook_events // 2}
            rate = float(STEADY_RATE)
            for kind, events in runs.items():
                since, started = len(receiver.answered()), time.monotonic()
                with ThreadPoolExecutor(args.connections) as pool:
                    made = []
                    for number in range(events):
                        if kind == "steady":  # on time, however long a mint takes
                            time.sleep(max(0.0, started + number / rate - time.monotonic()))
                        made.append(pool.submit(mint, server))
                    for future in made:
                        future.result()  # raises unless the mint answered 200
                made_seconds = time.monotonic() - started
                got = delivered(receiver, since, events, timeout=60 + events / 10)
                result = figures(got, events, made_seconds, hook["secret"])
                if kind == "burst":
                    result["clients"] = args.connections
                    # Well under what the worker delivered: a lag, not a queue.
                    rate = min(rate, result["per_s"] / 2)
                else:
                    result["rate"] = rate
                results.webhooks[(server.backend, kind)] = result
                if result["delivered"] < events or result["copies"]:
                    results.notes.append(
                        f"{server.backend} webhooks {kind}: {result['delivered']} of "
                        f"{events} events delivered, {result['copies']} copies"
                    )
                log(
                    f"{server.backend} webhooks {kind:6s} {events} events, made "
                    f"{result['made_per_s']:5.0f}/s, delivered {result['per_s']:5.0f}/s, lag "
                    f"p50 {result['p50_ms']:7.1f} ms  p99 {result['p99_ms']:7.1f} ms"
                )
        finally:
            delete(server, hook)
