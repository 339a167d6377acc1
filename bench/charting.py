"""bench/results.png: requests per second and latency of each scenario, per database."""

from pathlib import Path

from bench.scenarios import IMPL_LABELS, IMPLS, SCENARIO_ORDER, Results, first_scenario

COLORS = {
    "usergroups": "#2b7bba",
    "baseline0": "#d0d0d0",
    "noauth": "#bcbcbc",
    "baseline1": "#9a9a9a",
    "baseline2": "#e07b39",
}


def chart(results: Results, backends: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(backends), 2, figsize=(14, 4.2 * len(backends)), squeeze=False)
    for row, backend in enumerate(backends):
        ax_rps, ax_lat = axes[row]
        keys = [k for k in SCENARIO_ORDER if any((backend, k, i) in results.runs for i in IMPLS)]
        labels = [first_scenario(k).label for k in keys]
        width = 0.8 / len(IMPLS)
        for offset, impl in enumerate(IMPLS):
            xs: list[float] = []
            rps: list[float] = []
            p50: list[float] = []
            p99: list[float] = []
            for i, key in enumerate(keys):
                value = results.median(backend, key, impl, "rps")
                if value is None:
                    continue
                xs.append(i + (offset - (len(IMPLS) - 1) / 2) * width)
                rps.append(value)
                p50.append((results.median(backend, key, impl, "p50_us") or 0) / 1000)
                p99.append((results.median(backend, key, impl, "p99_us") or 0) / 1000)
            ax_rps.bar(xs, rps, width, label=IMPL_LABELS[impl], color=COLORS[impl])
            ax_lat.bar(xs, p50, width, label=f"{IMPL_LABELS[impl]} p50", color=COLORS[impl])
            ax_lat.scatter(xs, p99, marker="_", s=200, color="black", zorder=3)
        base = results.median(backend, "get", "baseline1", "rps")
        if base:
            ax_rps.axhline(1.2 * base, color="#2b7bba", linestyle=":", linewidth=1)
        for ax, title in (
            (ax_rps, f"{backend}: requests/s (dotted: 1.2x baseline (1))"),
            (ax_lat, f"{backend}: latency p50 (bars) and p99 (ticks), ms"),
        ):
            ax.set_xticks(range(len(keys)), [x.replace(", ", ",\n") for x in labels], fontsize=8)
            ax.set_title(title, fontsize=10)
            ax.grid(axis="y", alpha=0.3)
        ax_lat.set_yscale("log")
        ax_rps.legend(fontsize=8)
    fig.suptitle(
        "django-usergroups vs DRF baselines: gunicorn 2 sync workers, wrk on loopback, "
        "medians of alternating rounds",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
