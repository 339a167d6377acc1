"""A short measured run of one request against a server: wrk (Debian's package) with the
benchmark's Lua scripts (bench/lua: ``get.lua`` sends a get-or-create with a JSON body and
prints one JSON line of results). For the cluster's figures, not for ``make bench``."""

import json
import os
import shutil
import subprocess
from typing import Any

from tests.support import ROOT

LUA = ROOT / "bench" / "lua"


def available() -> bool:
    return shutil.which("wrk") is not None


def measure(
    base_url: str,
    key: str,
    body: dict[str, Any],
    seconds: int = 10,
    connections: int = 8,
    script: str = "get",
) -> dict[str, Any]:
    """``seconds`` of ``script`` on ``connections`` connections: requests per second,
    latency percentiles (ms) and how many requests failed (non-2xx/3xx, socket errors)."""
    env = dict(os.environ, BENCH_AUTH=f"Token {key}", BENCH_BODY=json.dumps(body))
    done = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{connections}",
            f"-d{seconds}s",
            "--timeout",
            "10s",
            "-s",
            str(LUA / f"{script}.lua"),
            f"{base_url}/api/user",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=seconds + 30,
    )
    for line in done.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            raw = json.loads(line[len("BENCH_JSON ") :])
            errors = sum(raw[k] for k in raw if k.endswith("_errors")) + raw["timeouts"]
            return {
                "rps": raw["requests"] / (raw["duration_us"] / 1e6),
                "requests": raw["requests"],
                "p50_ms": raw["p50_us"] / 1000,
                "p99_ms": raw["p99_us"] / 1000,
                "errors": errors,
            }
    raise RuntimeError(f"wrk gave no result: {done.stdout}\n{done.stderr}")


def interleaved(
    runs: dict[str, tuple[str, str]], body: dict[str, Any], seconds: int, rounds: int = 2
) -> dict[str, list[dict[str, Any]]]:
    """Each run (label -> ``(base_url, key)``) measured ``rounds`` times, taking turns, so
    that a busy spell of a shared machine falls on every run alike."""
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in runs}
    for _ in range(rounds):
        for label, (base_url, key) in runs.items():
            results[label].append(measure(base_url, key, body, seconds))
    return results


def table(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Aligned text lines, one row per run: requests per second of each round and their
    mean, the mean p50, the worst p99, all errors."""
    lines = [
        f"  {'run':<46} {'req/s (rounds)':>16} {'mean':>5} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6}"
    ]
    for label, rounds in results.items():
        each = " / ".join(f"{r['rps']:.0f}" for r in rounds)
        lines.append(
            f"  {label:<46} {each:>16} {sum(r['rps'] for r in rounds) / len(rounds):5.0f}"
            f" {sum(r['p50_ms'] for r in rounds) / len(rounds):7.1f}"
            f" {max(r['p99_ms'] for r in rounds):7.1f} {sum(r['errors'] for r in rounds):6d}"
        )
    return lines
