"""The benchmark's report: the table of medians (stdout and bench/RESULTS.md), the
targets of issues 5 and 15 each run checks, and the RESULTS.md section between its markers."""

import argparse
import datetime
import os
import platform
import shlex
import sys

from bench import BENCH
from bench.scenarios import IMPL_LABELS, IMPLS, SCENARIO_ORDER, Results, first_scenario

MARK_BEGIN = "<!-- BEGIN RESULTS (written by bench/run.py) -->"
MARK_END = "<!-- END RESULTS -->"
HEADER = [
    "database",
    "scenario",
    "implementation",
    "req/s",
    "p50 ms",
    "p99 ms",
    "req/s vs (1)",
    "rounds",
]


def table_rows(results: Results, backends: list[str]) -> list[list[str]]:
    rows = []
    for backend in backends:
        base = results.median(backend, "get", "baseline1", "rps")
        for key in SCENARIO_ORDER:
            scenario = first_scenario(key)
            for impl in IMPLS:
                rps = results.median(backend, key, impl, "rps")
                if rps is None:
                    continue
                p50 = _median(results, backend, key, impl, "p50_us") / 1000
                p99 = _median(results, backend, key, impl, "p99_us") / 1000
                rounds = len(results.runs[(backend, key, impl)])
                one_connection = scenario.connections == 1
                ratio = f"{rps / base:.2f}x" if base and not one_connection else "-"
                rows.append(
                    [
                        backend,
                        scenario.label,
                        IMPL_LABELS[impl],
                        f"{rps:,.0f}",
                        f"{p50:.2f}",
                        f"{p99:.2f}",
                        ratio,
                        str(rounds),
                    ]
                )
    return rows


def _median(results: Results, backend: str, key: str, impl: str, metric: str) -> float:
    """A median that must exist (the runs of ``impl`` under ``key`` were measured)."""
    value = results.median(backend, key, impl, metric)
    assert value is not None, (backend, key, impl, metric)
    return value


def format_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def targets(
    results: Results, backends: list[str], args_connections: int = 8
) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for each target of issues 5 and 15 that the run measures
    (issue 15 raised get to 1.2x and create to 0.5x baseline (1))."""
    out = []
    for b in backends:

        def m(key: str, impl: str, metric: str = "rps", b: str = b) -> float | None:
            return results.median(b, key, impl, metric)

        base1, base2, ours = m("get", "baseline1"), m("get", "baseline2"), m("get", "usergroups")
        if base1 and ours:
            out.append(_throughput(f"{b}: get >= 1.2x baseline (1)", ours, base1, 1.2))
        if base2 and ours:
            out.append(_throughput(f"{b}: get >= 2x baseline (2)", ours, base2, 2))
        create = m("create", "usergroups")
        if base1 and create:
            out.append(_throughput(f"{b}: create >= 0.5x baseline (1)", create, base1, 0.5))
        verify, mint = m("embed_verify", "usergroups"), m("embed_mint", "usergroups")
        if base1 and verify:
            name = f"{b}: embed token verification >= 1.5x baseline (1)"
            out.append(_throughput(name, verify, base1, 1.5))
        if base1 and mint:
            out.append(
                _throughput(f"{b}: embed token minting >= 1.0x baseline (1)", mint, base1, 1)
            )
        p50, p99 = m("get", "usergroups", "p50_us"), m("get", "usergroups", "p99_us")
        if p50 and p99:
            out.append(_latency(f"{b}: get p99 <= 3x its p50", p99, p50, 3, "p99", "p50"))
        rot, get1c = m("rotate", "usergroups", "p50_us"), m("get_1c", "usergroups", "p50_us")
        if rot and get1c:
            name = f"{b}: rotation p50 <= 2x get p50 (both 1 connection)"
            out.append(_latency(name, rot, get1c, 2))
        get8 = m("get", "usergroups", "p50_us")
        if rot and get8:
            name = f"{b}: rotation p50 <= 2x get p50 (get at {args_connections} connections)"
            out.append(_latency(name, rot, get8, 2))
        deep = m("get_deep", "usergroups", "p50_us")
        if deep and get8:
            out.append(_latency(f"{b}: get p50 at depth 5 <= 1.2x at the root", deep, get8, 1.2))
        big = m("get_1m", "usergroups", "p50_us")
        if big and get8:
            out.append(_latency(f"{b}: get p50 at 1M groups <= 1.2x at 1k", big, get8, 1.2))
    if results.rss:
        workers = results.rss["workers"]
        worst = max(w["rss_end_kib"] / w["rss_1k_kib"] for w in workers)
        out.append(
            (
                f"{results.rss['backend']}: RSS of each worker after "
                f"{min(w['served_end'] for w in workers):,}+ requests <= 1.1x its RSS after "
                f"{min(w['served_1k'] for w in workers):,}+",
                f"{worst:.3f}x (worst worker)",
                worst <= 1.10,
            )
        )
    return out


def verification_ceiling(results: Results, backends: list[str]) -> list[str]:
    """Embed token verification between baseline (1) and the same body with no
    authentication at all (1-): how much of what any verification could gain it keeps."""
    lines = []
    for b in backends:
        base1 = results.median(b, "get", "baseline1", "rps")
        verify = results.median(b, "embed_verify", "usergroups", "rps")
        noauth = results.median(b, "embed_verify", "noauth", "rps")
        if base1 and verify and noauth:
            lines.append(
                f"{b}: no authentication at all (1-) {noauth / base1:.2f}x baseline (1), "
                f"embed token verification {verify / base1:.2f}x"
            )
    return lines


def pool_comparison(results: Results, backends: list[str]) -> list[str]:
    """Django's psycopg pool against persistent connections, per implementation: the
    same get, the same round, two servers that differ in that setting only."""
    lines = []
    for b in backends:
        for impl in ("usergroups", "baseline1"):
            pooled = results.median(b, "get_pool", impl, "rps")
            persistent = results.median(b, "get", impl, "rps")
            if not (pooled and persistent):
                continue
            p50s = [results.median(b, key, impl, "p50_us") or 0 for key in ("get_pool", "get")]
            lines.append(
                f"{b}, {IMPL_LABELS[impl]}: psycopg pool {pooled:,.0f} req/s (p50 "
                f"{p50s[0] / 1000:.2f} ms), persistent connections {persistent:,.0f} req/s "
                f"(p50 {p50s[1] / 1000:.2f} ms): the pool at {pooled / persistent:.2f}x"
            )
    return lines


def _throughput(name: str, rps: float, reference: float, floor: float) -> tuple[str, str, bool]:
    """A target of requests/s: at least ``floor`` times the ``reference``'s."""
    return name, f"{rps / reference:.2f}x", rps >= floor * reference


def _latency(
    name: str,
    p50_us: float,
    reference_us: float,
    ceiling: float,
    label: str = "",
    reference_label: str = "",
) -> tuple[str, str, bool]:
    """A target of latency (a median unless labelled): at most ``ceiling`` times the
    ``reference``'s."""
    measured = (
        f"{label and label + ' '}{p50_us / 1000:.2f} ms vs "
        f"{reference_label and reference_label + ' '}{reference_us / 1000:.2f} ms = "
        f"{p50_us / reference_us:.2f}x"
    )
    return name, measured, p50_us <= ceiling * reference_us


def write_results(
    results: Results,
    backends: list[str],
    args: argparse.Namespace,
    elapsed: float,
    loads: tuple[float, float, float],
) -> str:
    """Replaces the section of bench/RESULTS.md between the markers with this run's;
    returns the table and the targets for stdout."""
    rows = table_rows(results, backends)
    checks = targets(results, backends, args.connections)
    lines = [
        MARK_BEGIN,
        "",
        f"Run of {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} on {platform.node()} "
        f"({os.cpu_count()} cores, Python {platform.python_version()}), "
        f"{elapsed / 60:.1f} minutes.",
        "",
        "Command: `"
        + (f"make bench BENCH_ARGS={shlex.quote(args.raw)}" if args.raw else "make bench")
        + "`, which runs `"
        + shlex.join([".venv/bin/python", "-m", "bench.run", *sys.argv[1:]])
        + "`",
        "",
        f"Settings: gunicorn {args.workers} sync workers; wrk {args.threads} threads, "
        f"{args.connections} connections, {args.duration} s per run ({args.short_duration} s for "
        f"1-connection runs); {args.rounds} rounds, alternating implementations and scenarios "
        "(order reversed every other round); medians. Load average (1 min) at the start "
        f"{loads[0]:.2f}, before the rounds {loads[1]:.2f}, at the end {loads[2]:.2f}.",
        "",
        markdown_table(rows),
        "",
        "Targets (issues 5 and 15):",
        "",
    ]
    lines += [f"- {'met' if ok else 'MISSED'}: {name}: {value}" for name, value, ok in checks]
    if ceiling := verification_ceiling(results, backends):
        lines += ["", "Embed token verification against no authentication (same rounds):", ""]
        lines += [f"- {line}" for line in ceiling]
    if pooling := pool_comparison(results, backends):
        lines += ["", "Connections, get at 1k groups (same rounds):", ""]
        lines += [f"- {line}" for line in pooling]
    if results.rss:
        lines += ["", f"Memory ({results.rss['backend']}, get, RSS of each gunicorn worker):", ""]
        for w in results.rss["workers"]:
            lines.append(
                f"- worker {w['pid']}: {w['rss_1k_kib'] / 1024:.1f} MiB after it served "
                f"{w['served_1k']:,} requests ({results.rss['requests_first']:,} to the server), "
                f"{w['rss_end_kib'] / 1024:.1f} MiB after {w['served_end']:,} "
                f"({results.rss['requests_total']:,} to the server): "
                f"{w['rss_end_kib'] / w['rss_1k_kib']:.3f}x"
            )
    if results.notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in results.notes]
    lines += ["", "![results](results.png)", "", MARK_END]
    block = "\n".join(lines)
    path = BENCH / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n\n" + MARK_BEGIN + MARK_END
    if MARK_BEGIN in text and MARK_END in text:
        head, rest = text.split(MARK_BEGIN, 1)
        text = head + block + rest.split(MARK_END, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
    return (
        format_table(rows)
        + "\n\n"
        + "\n".join(
            f"{'met   ' if ok else 'MISSED'}  {name}: {value}" for name, value, ok in checks
        )
        + "".join(f"\n{line}" for line in verification_ceiling(results, backends))
        + "".join(f"\n{line}" for line in pool_comparison(results, backends))
    )
