"""The instruments' cost in process (issue 34), where wrk cannot resolve it: on a shared
2-core machine a row's rounds spread over 10% and more, and the target is 2%.

Three processes of the bench site on PostgreSQL's seeded database: two as the app ships
(the OpenTelemetry API alone, no SDK) and one without instruments
(bench/site/no_telemetry.py, as the ``uninstrumented`` server). Each serves the get, the
verification and the mint through Django's test client (the whole of Django, DRF and the
app, no socket); the parent has them time a block of each in turn, each first in turn,
and compares the main thread's CPU a request (the listener's thread and the database are
left out, so the instruments' share is if anything larger than in a served request). A
ratio is the median of the blocks' ratios, as throughput: without instruments / with
them, beside the control, the second process with the API / the first.

``make bench`` runs it after the rounds, beside the server that beats for the database
(bench/driving.py), so that no measured process beats; ``BENCH_ARGS="--backends postgres
--only instruments"`` runs it alone. ``python -m bench.instruments`` is one of the
processes.
"""

import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from typing import IO, Any

from bench import log
from bench.datasets import server_env
from bench.scenarios import NONE
from tests.support import ROOT
from tests.support.read_model import until_trusted

SCENARIOS = ("get", "verify", "mint")
BLOCKS = 300
REQUESTS = {"get": 20, "verify": 40, "mint": 8}  # about 20 ms of each a block


def measure_instruments(
    secrets: dict[str, str], blocks: int = BLOCKS
) -> dict[str, dict[str, list[float]]]:
    """Each scenario's ratios, one a block, as throughput: ``"api"``, the API alone / none;
    ``"control"``, the API alone / a second process of the same: the method's own spread,
    which the first is read against."""

    def start(telemetry: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "bench.instruments"],
            cwd=ROOT,
            env={
                **server_env("postgres"),
                "BENCH_TELEMETRY": telemetry,
                "BENCH_API_KEY": secrets["api_key"],
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    children = {"api": start("api"), "api again": start("api"), NONE: start(NONE)}
    try:
        for child in children.values():
            _ask(child, "warm")
        ratios: dict[str, dict[str, list[float]]] = {
            side: {key: [] for key in SCENARIOS} for side in ("api", "control")
        }
        names = list(children)
        for block in range(blocks):
            turn = names[block % 3 :] + names[: block % 3]  # each first in turn
            cpu = {name: _ask(children[name], "block") for name in turn}
            for key in SCENARIOS:
                ratios["api"][key].append(cpu[NONE][key] / cpu["api"][key])
                ratios["control"][key].append(cpu["api again"][key] / cpu["api"][key])
        log(
            "instruments in process, API alone / none (control): "
            + ", ".join(
                f"{key} {statistics.median(ratios['api'][key]):.3f}"
                f" ({statistics.median(ratios['control'][key]):.3f})"
                for key in SCENARIOS
            )
        )
        return ratios
    finally:
        for child in children.values():
            child.kill()
            child.wait()


def _ask(child: subprocess.Popen[str], order: str) -> dict[str, float]:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(order + "\n")
    child.stdin.flush()
    line = child.stdout.readline()
    if not line:
        raise RuntimeError(f"the {order} of an instruments process gave nothing")
    answer: dict[str, float] = json.loads(line)
    return answer


def child(orders: IO[str], answers: IO[str]) -> None:
    """One process of the site: times a block of each scenario at each ``block`` order."""
    # First: it sets Django up, the telemetry removed before the app loads or not.
    importlib.import_module("bench.site.wsgi")
    from django.test import Client

    from bench.workload import GET_BODY, MINT_BODY

    client = Client(HTTP_HOST="127.0.0.1")
    key = {"Authorization": f"Token {os.environ['BENCH_API_KEY']}"}

    def call(method: str, path: str, headers: dict[str, str], body: Any = None) -> Any:
        answer = client.generic(
            method, path, json.dumps(body) if body else "", "application/json", headers=headers
        )
        if answer.status_code != 200:
            raise RuntimeError(f"{method} {path}: {answer.status_code}")
        return answer

    token = call("POST", "/api/user/embed-token", key, MINT_BODY).json()["embed_token"]
    embed = {"Authorization": f"Embed {token}"}
    requests = {
        "get": lambda: call("GET", "/api/user", key, GET_BODY),
        "verify": lambda: call("GET", "/bench/embed", embed),
        "mint": lambda: call("POST", "/api/user/embed-token", key, MINT_BODY),
    }
    for order in orders:
        cpu = {}
        for scenario in SCENARIOS:
            count = REQUESTS[scenario] * (20 if order.strip() == "warm" else 1)
            # After the others' turns the read model is idle, and hears the beat again
            # before memory answers: not what is measured.
            requests[scenario]()
            until_trusted(2)
            started = time.thread_time()
            for _ in range(count):
                requests[scenario]()
            cpu[scenario] = (time.thread_time() - started) / count
        answers.write(json.dumps(cpu) + "\n")
        answers.flush()


if __name__ == "__main__":
    child(sys.stdin, sys.stdout)
