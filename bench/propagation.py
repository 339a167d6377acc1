"""The propagation step (PostgreSQL, the read model, issue 26): how long a revoked embed
token is still served after the revocation, while wrk loads the verification view.

Each of ``ROUNDS`` rounds mints a token for a new group and uses it until both workers
hold it in memory, then revokes it:

* by SQL typed by an operator (a connection of this process): from the ``COMMIT``'s
  answer, ``CLIENTS`` clients use the token for ``WATCH`` seconds; the figures are the
  last answer that served it (0 when none did) and the first that refused it, in ms
  after the commit;
* through the API: from the revocation's answer, the same clients; every use must be
  refused (the contract's "at once"), and the served ones are counted.
"""

import statistics
import subprocess
import threading
import time
from typing import TYPE_CHECKING

import psycopg

from bench import log
from bench.webhooks import Server
from tests.support.http import exchange

if TYPE_CHECKING:
    from bench.scenarios import Results

ROUNDS = 40
WARM = 20
CLIENTS = 4
WATCH = 0.1
MINT = "/api/user/embed-token"


def _uses(base_url: str, path: str, token: str, since: float) -> list[tuple[float, int]]:
    """``CLIENTS`` clients using ``token`` for ``WATCH`` s: (ms after ``since``, status)."""
    answers: list[tuple[float, int]] = []

    def client() -> None:
        while (sent := time.monotonic()) < since + WATCH:
            status = exchange(base_url, "GET", None, f"Embed {token}", path=path)[0]
            answers.append(((sent - since) * 1000, status))

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):.2f} ms, p99 {p99:.2f} ms"


def measure_propagation(
    server: Server, verify_path: str, load: list[str], load_env: dict[str, str], results: "Results"
) -> None:
    """The step; ``load``: the wrk command (and environment) of the verification run,
    which loads the server meanwhile."""
    base_url = server.gunicorn.base_url  # type: ignore[attr-defined]
    wrk = subprocess.Popen(load, env=load_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last_served: list[float] = []
    first_refused: list[float] = []
    served_after_answer = uses_after_answer = 0
    try:
        schema = server.env.get("BENCH_PG_SCHEMA", "public")
        with psycopg.connect(
            server.env["DATABASE_URL"], autocommit=True, options=f"-c search_path={schema}"
        ) as operator:
            for round_ in range(ROUNDS):
                for through_api in (False, True):
                    group = f"propagation-{round_}-{'api' if through_api else 'sql'}"
                    server.call("GET", "/api/user", "api_key", {"user_group_id": group})
                    token = server.call("POST", MINT, "api_key", {"user_group_id": group})[
                        "embed_token"
                    ]
                    for _ in range(WARM):
                        exchange(base_url, "GET", None, f"Embed {token}", path=verify_path)
                    if through_api:
                        server.call("POST", f"{MINT}/revoke", "api_key", {"user_group_id": group})
                    else:
                        operator.execute(
                            "UPDATE usergroups_usergroup SET embed_generation ="
                            " embed_generation + 1 WHERE provided_id = %s",
                            (group,),
                        )
                    since = time.monotonic()
                    answers = _uses(base_url, verify_path, token, since)
                    if through_api:
                        served_after_answer += sum(status != 401 for _, status in answers)
                        uses_after_answer += len(answers)
                        continue
                    last_served.append(max((t for t, s in answers if s != 401), default=0.0))
                    first_refused.append(
                        min((t for t, s in answers if s == 401), default=WATCH * 1000)
                    )
    finally:
        wrk.terminate()
        wrk.wait(timeout=30)
    line = (
        f"{server.backend}, revocation under load ({ROUNDS} rounds each, wrk on the "
        f"verification view): by SQL, last use served after the commit {_percentiles(last_served)}"
        f", first refusal {_percentiles(first_refused)}; through the API, {served_after_answer}"
        f" of {uses_after_answer} uses after the answer served"
    )
    log(line)
    results.notes.append(line)
