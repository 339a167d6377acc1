"""Driving the benchmark: the site under gunicorn on one backend, wrk runs against it
with the Lua scripts in bench/lua (each prints one ``BENCH_JSON`` line of figures), and
the interleaved rounds."""

import argparse
import contextlib
import json
import os
import re
import subprocess
import time
import urllib.request
import uuid
from typing import Any

from bench import BENCH, OUT, log
from bench.datasets import PG_URL, database_name, server_env
from bench.instruments import BLOCKS, measure_instruments
from bench.profiling import profile
from bench.propagation import measure_propagation
from bench.scenarios import (
    API,
    INSTRUMENTS,
    LABELS,
    NONE,
    PROPAGATION,
    SDK,
    WEBHOOKS,
    Results,
    Run,
    runs_for,
)
from bench.webhooks import measure_webhooks
from bench.workload import CONSTANT_RESPONSE, GET_BODY, MINT_BODY, MINT_BODY_END_USER
from tests.support import ROOT
from tests.support.gunicorn import Gunicorn
from tests.support.http import exchange
from tests.support.postgres import ADMIN_URL, listening_backends
from usergroups.read_model.listening import BEAT_APPLICATION_NAME

LUA = BENCH / "lua"
# The header each kind of credential goes in; the embed and simplejwt tokens are minted
# anew for each run (they expire), the others come from the seed.
SCHEMES = {
    "api_key": "Token",
    "authtoken": "Token",
    "knox": "Token",
    "embed_token": "Embed",
    "embed_token_end_user": "Embed",
    "simplejwt_token": "Bearer",
}


def shape(answer: Any) -> Any:
    """The keys of a JSON answer, nested, without the values."""
    if isinstance(answer, dict):
        return {key: shape(value) for key, value in answer.items()}
    return None


class Server:
    """``bench.site`` under gunicorn on one backend's seeded database (PostgreSQL:
    ``pg_url``'s), with its ``telemetry`` (bench/scenarios.py); ``name`` names its log
    (bench/out/gunicorn-NAME.log)."""

    def __init__(
        self,
        backend: str,
        secrets: dict[str, str],
        args: argparse.Namespace,
        *,
        pg_url: str = PG_URL,
        name: str | None = None,
        telemetry: str = API,
    ) -> None:
        self.backend, self.secrets = backend, secrets
        self.env = server_env(backend, args.pg_prepare_threshold, pg_url)
        name = name or (backend if telemetry == API else f"{backend}-{telemetry}")
        self.log_path = OUT / f"gunicorn-{name}.log"
        config: tuple[str, ...] = ()
        if telemetry == NONE:
            self.env["BENCH_TELEMETRY"] = NONE  # bench/site/wsgi.py
        elif telemetry == SDK:
            # The example project's switch and gunicorn hooks (example_project/metrics.py),
            # and a multiprocess directory of this server's own, which its hooks empty.
            metrics_dir = OUT / f"prometheus-{name}"
            metrics_dir.mkdir(exist_ok=True)
            self.env.update(DJANGO_METRICS="true", PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
            config = ("--config", str(ROOT / "example_project" / "gunicorn.conf.py"))
        self.gunicorn = Gunicorn(
            self.env,
            self.log_path,
            args.workers,
            "--log-level",
            "warning",
            *config,
            app="bench.site.wsgi:application",
        )

    def __enter__(self) -> "Server":
        self.log_path.unlink(missing_ok=True)
        self.gunicorn.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.gunicorn.stop()

    def call(
        self, method: str, path: str, secret: str, body: dict[str, Any] | None
    ) -> dict[str, Any]:
        """One request's JSON answer; raises unless it is a 200."""
        status, answer, _ = exchange(
            self.gunicorn.base_url, method, body, self.authorization(secret), path=path
        )
        if status != 200:
            raise RuntimeError(f"{method} {path} answered {status}: {answer}")
        return dict(answer)

    def authorization(self, secret: str) -> str:
        if secret == "embed_token":
            token = self.call("POST", "/api/user/embed-token", "api_key", MINT_BODY)
        elif secret == "embed_token_end_user":
            token = self.call("POST", "/api/user/embed-token", "api_key", MINT_BODY_END_USER)
        elif secret == "simplejwt_token":
            token = self.call("POST", "/bench/simplejwt/mint", "authtoken", MINT_BODY)
        else:
            return f"{SCHEMES[secret]} {self.secrets[secret]}"
        return f"{SCHEMES[secret]} {token['embed_token']}"

    def until_someone_beats(
        self, database: str, admin_url: str = ADMIN_URL, seconds: float = 10
    ) -> list[int]:
        """The beat's sessions of ``database``, once there is one: only a process that
        wants memory takes the beat (usergroups.read_model.listening), so this server is
        asked until it, or another, beats."""
        deadline = time.monotonic() + seconds
        while not (beating := listening_backends(database, BEAT_APPLICATION_NAME, admin_url)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"nobody beats for {database}; see {self.log_path}")
            self.call("GET", "/api/user", "api_key", GET_BODY)  # it wants memory: it beats
            time.sleep(0.2)
        return beating

    def check_like_with_like(self, servers: dict[str, "Server"]) -> None:
        """Every verification view answers the same body (on the server of each run's
        telemetry, in ``servers``), and the authtoken view a body of the shape of the
        app's get, or the rows would compare unlike work."""
        answers = {
            run.impl: servers[run.telemetry].call("GET", run.path, run.secret, None)
            for run in runs_for(frozenset({"verify"}), self.backend)
            if run.telemetry in servers  # `--only` without verification starts the API's alone
        }
        if len({json.dumps(a, sort_keys=True) for a in answers.values()}) != 1:
            raise RuntimeError(f"the verification views answer differently: {answers}")
        get = self.call("GET", "/api/user", "api_key", GET_BODY)
        if shape(get) != shape(CONSTANT_RESPONSE):
            raise RuntimeError(
                f"the app's get answers {shape(get)}, bench/workload.py has "
                f"{shape(CONSTANT_RESPONSE)}"
            )

    def check_metrics(self, timeout: float = 20) -> None:
        """The SDK's server scrapes the app's instruments at /metrics, as the example
        project's does (each worker writes its samples every 5 s)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback
        deadline = time.monotonic() + timeout
        while True:
            with opener.open(f"{self.gunicorn.base_url}/metrics", timeout=10) as response:
                if re.search(rb"^usergroups_\w+[{ ]", response.read(), re.MULTILINE):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"no usergroups_ metric at /metrics; see {self.log_path}")
            time.sleep(0.5)

    def wrk_command(
        self,
        run: Run,
        args: argparse.Namespace,
        duration: float,
        script_env: dict[str, str] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The wrk command of ``run`` and its environment; ``script_env``: what its script
        reads instead of ``run.secret``'s credential (``tokens.lua``: BENCH_TOKENS)."""
        if script_env is not None:
            return self._wrk_argv(run, args, duration), {**os.environ, **script_env}
        env = {**os.environ, "BENCH_AUTH": self.authorization(run.secret)}
        if run.script == "get":
            env["BENCH_BODY"] = json.dumps(GET_BODY)
        elif run.script == "post":
            env["BENCH_BODY"] = json.dumps(MINT_BODY_END_USER if run.end_user else MINT_BODY)
        elif run.script == "create":
            env["BENCH_RUN_ID"] = f"new-{uuid.uuid4().hex[:12]}"
        elif run.script == "rotate":  # a fresh group per run; the chain starts at its token
            body = {"user_group_id": f"chain-{uuid.uuid4().hex}"}
            env["BENCH_TOKEN"] = self.call("GET", run.path, run.secret, body)["user_group"]["token"]
        return self._wrk_argv(run, args, duration), env

    def _wrk_argv(self, run: Run, args: argparse.Namespace, duration: float) -> list[str]:
        connections = run.connections or args.connections
        return [
            "wrk",
            f"-t{min(args.threads, connections)}",
            f"-c{connections}",
            f"-d{max(1, round(duration))}s",
            "--timeout",
            "10s",
            "-s",
            str(LUA / f"{run.script}.lua"),
            self.gunicorn.base_url + run.path,
        ]

    def wrk(
        self,
        run: Run,
        args: argparse.Namespace,
        duration: float,
        script_env: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One wrk run of ``run``; its figures (latencies in µs, req/s, errors)."""
        cmd, env = self.wrk_command(run, args, duration, script_env)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=duration + 60)
        for line in done.stdout.splitlines():
            if line.startswith("BENCH_JSON "):
                result: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
                result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
                result["errors"] = result["timeouts"] + sum(
                    result[k]
                    for k in ("connect_errors", "read_errors", "write_errors", "status_errors")
                )
                return result
        raise RuntimeError(f"wrk gave no result: {done.stdout}\n{done.stderr}")


@contextlib.contextmanager
def beating_server(backend: str, secrets: dict[str, str], args: argparse.Namespace) -> Any:
    """A one-worker server of the same site that beats for the database (the read model's
    proof of hearing, usergroups.read_model.listening), started first and asked once,
    as one of a site's many processes beats for all: the measured servers' workers only
    listen, whichever telemetry they load, and no row carries the beat's thread."""
    with Server(
        backend, secrets, argparse.Namespace(**{**vars(args), "workers": 1}), name=f"{backend}-beat"
    ) as server:
        server.until_someone_beats(database_name(PG_URL))
        yield server


def measure_backend(
    backend: str, secrets: dict[str, str], args: argparse.Namespace, results: Results
) -> None:
    """Warm-up, ``--profile``, then ``--rounds`` rounds of every run, in turns (the order
    reversed every other round), then the webhook step (its webhook would add to the
    mints of the rounds). The runs of another telemetry than the API's load a server each,
    started beside the first and stopped after the rounds."""
    runs = runs_for(args.only, backend)
    with contextlib.ExitStack() as beat, contextlib.ExitStack() as others:
        if backend == "postgres":
            beat.enter_context(beating_server(backend, secrets, args))
        server = beat.enter_context(Server(backend, secrets, args))
        servers = {API: server}
        for telemetry in sorted({run.telemetry for run in runs} - {API}):
            servers[telemetry] = others.enter_context(
                Server(backend, secrets, args, telemetry=telemetry)
            )
        server.check_like_with_like(servers)
        log(f"{backend}: up, a server of each telemetry: {', '.join(servers)}; warming up")
        for run in runs:
            if errors := servers[run.telemetry].wrk(run, args, duration=1)["errors"]:
                raise RuntimeError(
                    f"{backend} {run.key} {run.impl}: {errors} errors in the warm-up; "
                    f"see {servers[run.telemetry].log_path}"
                )
        if SDK in servers:
            servers[SDK].check_metrics()
        for key in args.profile:
            run = next(r for r in runs_for(frozenset({key})) if r.impl == "usergroups")
            pid = server.gunicorn.worker_pids()[0]
            profile(f"{backend}-{key}", pid, lambda run=run: server.wrk(run, args, 8))
        for round_no in range(args.rounds):
            for run in runs if round_no % 2 == 0 else runs[::-1]:
                result = servers[run.telemetry].wrk(run, args, args.duration)
                results.add(backend, run, result)
                if result["errors"]:
                    results.notes.append(
                        f"{backend} {run.key} {run.impl} round {round_no + 1}: "
                        f"{result['errors']} errors or non-2xx of {result['requests']}"
                    )
                log(
                    f"{backend} round {round_no + 1}/{args.rounds} {LABELS[run.key]:34.34s} "
                    f"{run.impl:14s} {result['rps']:7.0f} req/s  p50 "
                    f"{result['p50_us'] / 1000:6.2f} ms  p99 {result['p99_us'] / 1000:6.2f} ms"
                    + (f"  ERRORS {result['errors']}" if result["errors"] else "")
                )
        others.close()  # the steps after the rounds run beside the first server alone
        if backend == "postgres" and (not args.only or INSTRUMENTS in args.only):
            results.instruments = measure_instruments(secrets, 20 if args.smoke else BLOCKS)
        if backend == "postgres" and (not args.only or PROPAGATION in args.only):
            verify = next(r for r in runs_for(frozenset({"verify"})) if r.impl == "usergroups")
            load, load_env = server.wrk_command(verify, args, duration=600)
            measure_propagation(server, verify.path, load, load_env, results)
        if not args.only or WEBHOOKS in args.only:
            measure_webhooks(server, args, results)
