"""The report: the ratios against their targets (each with the p50 and p99 of both
sides), the table of every run, 0.3's figures beside create and rotation, and the
section of bench/RESULTS.md between its markers; the scale step's tables, in a section
of their own."""

import argparse
import datetime
import os
import platform
import shlex
import statistics

from bench import BENCH
from bench.scenarios import (
    IDLE_COMMITS,
    IDLE_FLAT,
    IDLE_SLACK,
    INSTRUMENTS_FLOOR,
    LABELS,
    LISTEN_CPU,
    LISTEN_CPU_AT,
    RATIOS,
    READ_MODEL_MAX_BYTES,
    READS,
    RUNS,
    V03,
    Ratio,
    Results,
    ScaleResults,
)

MARK_BEGIN = "<!-- BEGIN RESULTS (written by bench/run.py) -->"
MARK_END = "<!-- END RESULTS -->"
NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL", "postgresql": "PostgreSQL"}


def ratio_cell(results: Results, backend: str, ratio: Ratio) -> tuple[str, bool] | None:
    """``ratio`` on ``backend`` (the median of its rounds' ratios, and their range) with
    both sides' median p50 and p99, and whether it meets its target; None unless both
    sides were measured."""
    (top_key, top_impl), (bottom_key, bottom_impl) = ratio.top, ratio.bottom
    top = [results.median(backend, top_key, top_impl, m) for m in ("rps", "p50_us", "p99_us")]
    bottom = [
        results.median(backend, bottom_key, bottom_impl, m) for m in ("rps", "p50_us", "p99_us")
    ]
    if None in top or None in bottom:
        return None
    rounds = results.round_ratios(backend, ratio.top, ratio.bottom)
    value = statistics.median(rounds)
    met = round(value, 2) >= ratio.floor_for(backend)  # as shown
    shown = f"{value:.2f}" if met else f"**{value:.2f} MISSED**"
    spread = f" (rounds {min(rounds):.2f}-{max(rounds):.2f})" if len(rounds) > 1 else ""
    return (
        f"{shown}{spread}; p50 {top[1] / 1000:.2f} / {bottom[1] / 1000:.2f} ms, "
        f"p99 {top[2] / 1000:.2f} / {bottom[2] / 1000:.2f} ms",
        met,
    )


def target_text(ratio: Ratio, backends: list[str]) -> str:
    if isinstance(ratio.floor, float):
        return f">= {ratio.floor}"
    return ", ".join(f"{NAMES[b]} >= {ratio.floor_for(b):.2f}" for b in backends)


def ratio_table(results: Results, backends: list[str]) -> str:
    head = [
        "ratio (req/s, of each round; p50 and p99 of each side)",
        *(NAMES[b] for b in backends),
        "target",
    ]
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


def instruments_table(results: Results) -> str:
    """bench/instruments.py's ratios; empty if it did not run."""
    if not results.instruments:
        return ""
    lines = [
        "| in process, main thread's CPU a request (PostgreSQL) | API alone / none | control:"
        " API alone / API alone | blocks | target |",
        "|---|---|---|---|---|",
    ]

    def cell(ratios: list[float]) -> str:
        quartiles = statistics.quantiles(ratios)
        return f"{statistics.median(ratios):.3f} (quartiles {quartiles[0]:.2f}-{quartiles[2]:.2f})"

    for key, ratios in results.instruments["api"].items():
        shown = cell(ratios)
        if round(statistics.median(ratios), 2) < INSTRUMENTS_FLOOR:
            shown = f"**{shown} MISSED**"
        control = results.instruments["control"][key]
        lines.append(
            f"| {LABELS[key]} | {shown} | {cell(control)} | {len(ratios)} | >= {INSTRUMENTS_FLOOR} |"
        )
    return "\n".join(lines)


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
    parts.append(instruments_table(results))
    parts.append("\n".join(against_v03(results, backends) + results.notes))
    return "\n\n".join(part for part in parts if part)


def command(args: argparse.Namespace) -> str:
    """The command of a run of bench/run.py, as ``make bench`` is given it."""
    return "make bench" + (f" BENCH_ARGS={shlex.quote(args.raw)}" if args.raw else "")


def write_results(
    results: Results,
    backends: list[str],
    args: argparse.Namespace,
    elapsed: float,
    loads: tuple[float, float],
) -> None:
    """Replaces the section of bench/RESULTS.md between its markers with this run's."""
    lines = [
        "",
        f"Run of {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} on {platform.node()} "
        f"({os.cpu_count()} cores, Python {platform.python_version()}), `{command(args)}`, "
        f"{elapsed / 60:.1f} minutes; {args.rounds} interleaved round"
        f"{'s' * (args.rounds != 1)} of {args.duration:g} s (a ratio: the median of its "
        "rounds' ratios; req/s and latencies: medians), "
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
    if instruments := instruments_table(results):
        lines += [instruments, ""]
    lines += [f"- {line}" for line in against_v03(results, backends) + results.notes]
    replace_section(MARK_BEGIN, MARK_END, [*lines, ""])


def replace_section(begin: str, end: str, lines: list[str]) -> None:
    """Replaces what bench/RESULTS.md holds between the markers ``begin`` and ``end``."""
    path = BENCH / "RESULTS.md"
    text = path.read_text()
    head, rest = text.split(begin, 1)
    path.write_text(head + "\n".join([begin, *lines, end]) + rest.split(end, 1)[1])


# The scale step's (bench/scale.py), in a section of its own.

SCALE_BEGIN = "<!-- BEGIN SCALE RESULTS (written by bench/scale.py) -->"
SCALE_END = "<!-- END SCALE RESULTS -->"


def verdict(met: bool, text: str) -> str:
    return text if met else f"**{text} MISSED**"


def idle_table(results: ScaleResults) -> str:
    rows = sorted(results.idle, key=lambda row: row.workers)
    if not rows:
        return ""
    head = [
        "workers listening",
        "commits/s, idle",
        "listening + beating server processes, % of one core",
        "of which the beat",
        "wakes/s of each listening one",
        "the workers, % of one core",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fewest = rows[0].commits
    for row in rows:
        most = max(fewest * IDLE_FLAT, fewest + IDLE_SLACK)
        flat = row.commits <= IDLE_COMMITS and row.commits <= most
        cpu_met = row.workers != LISTEN_CPU_AT or row.listen_cpu < LISTEN_CPU
        lines.append(
            f"| {row.workers} ({row.listening}) | {verdict(flat, f'{row.commits:.1f}')} | "
            f"{verdict(cpu_met, f'{row.listen_cpu:.1f}')} | {row.beat_cpu:.1f} | "
            f"{row.wakes:.1f} | {row.app_cpu:.1f} |"
        )
    return "\n".join(lines)


def churn_table(results: ScaleResults) -> str:
    if not results.churn:
        return ""
    head = [
        "phase (2 workers)",
        "verifications/s",
        "verifications (200)",
        "denylist reads",
        "reads per verification",
        "persons minted/s",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in results.churn:
        per = row.per_verification
        minted = "-" if row.minted is None else f"{row.minted:.1f}"
        lines.append(
            f"| {row.phase} | {row.rps:,.0f} | {row.ok:,} | {row.reads:,} | "
            f"{verdict(per <= READS, f'{per:.3f}')} | {minted} |"
        )
    return "\n".join(lines)


def memory_line(results: ScaleResults) -> str:
    row = results.memory
    if row is None:
        return ""
    within = row.growth <= READ_MODEL_MAX_BYTES
    return (
        f"Memory: {row.tokens:,} tokens of one group whose properties are "
        f"{row.properties_bytes:,} bytes of JSON, each verified once by one worker "
        f"({row.served:,} answered 200): resident {mib(row.rss_before)} MiB after the first "
        f"100, {mib(row.rss_after)} MiB after all (peak {mib(row.peak)}): "
        + verdict(within, f"+{mib(row.growth)} MiB")
        + f" against READ_MODEL_MAX_BYTES {mib(READ_MODEL_MAX_BYTES)} MiB. The last "
        f"{row.again:,} again: {row.again_reads} reads of the database."
    )


def scale_summary(results: ScaleResults) -> str:
    parts = [idle_table(results), churn_table(results), memory_line(results)]
    parts.append("\n".join(f"- {note}" for note in results.notes))
    return "\n\n".join(part for part in parts if part)


def write_scale_results(results: ScaleResults, command: str) -> None:
    """Replaces the scale section of bench/RESULTS.md with this run's."""
    plan, loads = results.plan, results.loads
    head = (
        f"Run of {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} on {platform.node()} "
        f"({os.cpu_count()} cores, Python {platform.python_version()}), `{command}`, "
        f"{results.elapsed / 60:.1f} minutes; idle {plan.idle:g} s at each count, verification runs "
        f"of {plan.seconds:g} s after {plan.warm:g} s of warm-up, {plan.live_tokens} live "
        f"tokens, persons minted at {plan.churn_rate:g}/s. Load average (1 min) at the start "
        f"{loads[0]:.2f}, at the end {loads[1]:.2f}."
    )
    replace_section(SCALE_BEGIN, SCALE_END, ["", head, "", scale_summary(results), ""])


def mib(size: int) -> str:
    return f"{size / 2**20:.1f}"
