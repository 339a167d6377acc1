"""The report: the ratios against their targets (each with the p50 and p99 of both
sides), the table of every run, 0.3's figures beside create and rotation, and the
section of bench/RESULTS.md between its markers."""

import argparse
import datetime
import os
import platform
import shlex

from bench import BENCH
from bench.scenarios import LABELS, RATIOS, RUNS, V03, Ratio, Results

MARK_BEGIN = "<!-- BEGIN RESULTS (written by bench/run.py) -->"
MARK_END = "<!-- END RESULTS -->"
NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def ratio_cell(results: Results, backend: str, ratio: Ratio) -> tuple[str, bool] | None:
    """``ratio`` on ``backend`` with both sides' p50 and p99, and whether it meets its
    target; None unless both sides were measured."""
    (top_key, top_impl), (bottom_key, bottom_impl) = ratio.top, ratio.bottom
    top = [results.median(backend, top_key, top_impl, m) for m in ("rps", "p50_us", "p99_us")]
    bottom = [
        results.median(backend, bottom_key, bottom_impl, m) for m in ("rps", "p50_us", "p99_us")
    ]
    if None in top or None in bottom:
        return None
    value = top[0] / bottom[0]
    met = round(value, 2) >= ratio.floor_for(backend)  # as shown
    shown = f"{value:.2f}" if met else f"**{value:.2f} MISSED**"
    return (
        f"{shown}; p50 {top[1] / 1000:.2f} / {bottom[1] / 1000:.2f} ms, "
        f"p99 {top[2] / 1000:.2f} / {bottom[2] / 1000:.2f} ms",
        met,
    )


def target_text(ratio: Ratio, backends: list[str]) -> str:
    if isinstance(ratio.floor, float):
        return f">= {ratio.floor}"
    return ", ".join(f"{NAMES[b]} >= {ratio.floor_for(b):.2f}" for b in backends)


def ratio_table(results: Results, backends: list[str]) -> str:
    head = ["ratio (req/s; p50 and p99 of each side)", *(NAMES[b] for b in backends), "target"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ratio in RATIOS:
        cells = [ratio_cell(results, b, ratio) for b in backends]
        if any(cells):
            texts = [cell[0] if cell else "-" for cell in cells]
            lines.append(
                f"| {ratio.name} | " + " | ".join(texts) + f" | {target_text(ratio, backends)} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""  # none with --only webhooks


def runs_table(results: Results, backends: list[str]) -> str:
    head = ["database", "scenario", "implementation", "req/s", "p50 ms", "p99 ms", "rounds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for backend in backends:
        for run in RUNS:
            rps = results.median(backend, run.key, run.impl, "rps")
            if rps is None:
                continue
            p50 = results.median(backend, run.key, run.impl, "p50_us") or 0
            p99 = results.median(backend, run.key, run.impl, "p99_us") or 0
            rounds = len(results.runs[(backend, run.key, run.impl)])
            cells = [NAMES[backend], LABELS[run.key], run.label, f"{rps:,.0f}"]
            cells += [f"{p50 / 1000:.2f}", f"{p99 / 1000:.2f}", str(rounds)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def webhook_table(results: Results, backends: list[str]) -> str:
    """The webhook step's runs (bench/webhooks.py); empty if it did not run."""
    head = ["database", "webhook run", "events", "made/s", "delivered/s", "lag p50 ms"]
    lines = ["| " + " | ".join([*head, "lag p99 ms"]) + " |", "|" + "---|" * (len(head) + 1)]
    for backend in backends:
        for kind in ("burst", "steady", "hanging"):
            if (got := results.webhooks.get((backend, kind))) is None:
                continue
            if kind == "burst":
                label = f"burst, {got['clients']:.0f} clients"
            elif kind == "steady":
                label = f"steady, {got['rate']:.0f} mints/s"
            else:
                label = f"steady, {got['rate']:.0f} mints/s, beside {got['hanging']:.0f} hanging"
            cells = [NAMES[backend], label, f"{got['delivered']:,.0f} of {got['events']:,.0f}"]
            cells += [f"{got[k]:,.0f}" for k in ("made_per_s", "per_s")]
            cells += [f"{got[k]:,.1f}" for k in ("p50_ms", "p99_ms")]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def against_v03(results: Results, backends: list[str]) -> list[str]:
    """Create and rotation beside 0.3's figures (another run, another day: the ratios
    above, within one run, are what the target reads)."""
    lines = []
    for backend in backends:
        for key in ("create", "rotate"):
            rps = results.median(backend, key, "usergroups", "rps")
            if rps is None:
                continue
            p50 = (results.median(backend, key, "usergroups", "p50_us") or 0) / 1000
            p99 = (results.median(backend, key, "usergroups", "p99_us") or 0) / 1000
            old = V03[(backend, key)]
            lines.append(
                f"{NAMES[backend]}, {LABELS[key]}: {rps:,.0f} req/s, p50 {p50:.2f} ms, p99 "
                f"{p99:.2f} ms (0.3: {old[0]:,} req/s, p50 {old[1]:.2f} ms, p99 {old[2]:.2f} ms)"
            )
    return lines


def summary(results: Results, backends: list[str]) -> str:
    """What a run prints: the ratios, the runs, create and rotation against 0.3."""
    parts = [ratio_table(results, backends), runs_table(results, backends)]
    parts.append(webhook_table(results, backends))
    parts.append("\n".join(against_v03(results, backends) + results.notes))
    return "\n\n".join(part for part in parts if part)


def write_results(
    results: Results,
    backends: list[str],
    args: argparse.Namespace,
    elapsed: float,
    loads: tuple[float, float],
) -> None:
    """Replaces the section of bench/RESULTS.md between its markers with this run's."""
    command = "make bench" + (f" BENCH_ARGS={shlex.quote(args.raw)}" if args.raw else "")
    lines = [
        MARK_BEGIN,
        "",
        f"Run of {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} on {platform.node()} "
        f"({os.cpu_count()} cores, Python {platform.python_version()}), `{command}`, "
        f"{elapsed / 60:.1f} minutes; medians of {args.rounds} interleaved round"
        f"{'s' * (args.rounds != 1)} of {args.duration:g} s, "
        f"{args.workers} gunicorn workers, wrk {args.connections} connections"
        + (
            f", psycopg prepare_threshold {args.pg_prepare_threshold}"
            if args.pg_prepare_threshold is not None
            else ""
        )
        + f". Load average (1 min) at the start {loads[0]:.2f}, at the end {loads[1]:.2f}.",
        "",
        ratio_table(results, backends),
        "",
        runs_table(results, backends),
        "",
    ]
    if webhooks := webhook_table(results, backends):
        lines += [webhooks, ""]
    lines += [f"- {line}" for line in against_v03(results, backends) + results.notes]
    lines += ["", MARK_END]
    path = BENCH / "RESULTS.md"
    text = path.read_text()
    head, rest = text.split(MARK_BEGIN, 1)
    path.write_text(head + "\n".join(lines) + rest.split(MARK_END, 1)[1])
