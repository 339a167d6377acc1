"""example_project/metrics.py: what several processes meter with the OpenTelemetry SDK
comes out of one prometheus_client multiprocess scrape exactly (counters and histograms
added up, gauges per process), however often each process writes its file."""

import subprocess
import sys

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from tests.support import ROOT

# One process of a site: it meters, writes, meters more and writes again (a second write
# replaces the first: the file holds the process's totals, never their sum).
PROCESS = """
import sys
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry
from example_project.metrics import ProcessFile

share = float(sys.argv[1])
registry = CollectorRegistry()
reader = PrometheusMetricReader(registry=registry, disable_target_info=True)
meter = MeterProvider(metric_readers=[reader]).get_meter("usergroups", "1.0")
verifications = meter.create_counter("usergroups.embed.verifications")
duration = meter.create_histogram(
    "usergroups.verification.duration", unit="s", explicit_bucket_boundaries_advisory=[0.1, 1]
)
held = meter.create_up_down_counter("usergroups.read_model.entries")
process_file = ProcessFile(registry)
verifications.add(1, {"outcome": "verified"})
duration.record(0.05 * share, {"answered_by": "memory"})
held.add(10 * share)
process_file.write()
verifications.add(2, {"outcome": "refused", "code": "token_expired"})
duration.record(0.5 * share, {"answered_by": "memory"})
duration.record(5 * share, {"answered_by": "memory"})
held.add(-1)
process_file.write()
"""


def test_two_processes_in_one_scrape(tmp_path):
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for share in ("1", "1.5"):
        subprocess.run(
            [sys.executable, "-c", PROCESS, share], cwd=ROOT, env=env, check=True, timeout=60
        )
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(tmp_path))
    scrape = generate_latest(registry).decode()
    samples = [s for f in text_string_to_metric_families(scrape) for s in f.samples]

    def named(name):
        return [s for s in samples if s.name == f"usergroups_{name}"]

    assert sorted(
        (s.labels["outcome"], s.labels.get("code"), s.value)
        for s in named("embed_verifications_total")
    ) == [("refused", "token_expired", 4.0), ("verified", None, 2.0)]
    # 0.05, 0.5, 5 and 0.075, 0.75, 7.5 seconds, added up bucket by bucket.
    assert {s.labels["le"]: s.value for s in named("verification_duration_seconds_bucket")} == {
        "0.1": 2.0,
        "1.0": 4.0,
        "+Inf": 6.0,
    }
    [count] = named("verification_duration_seconds_count")
    [total] = named("verification_duration_seconds_sum")
    assert count.value == 6.0 and abs(total.value - 13.875) < 1e-9
    # A gauge per process, told apart by its pid.
    entries = named("read_model_entries")
    assert sorted(s.value for s in entries) == [9.0, 14.0]
    assert len({s.labels["pid"] for s in entries}) == 2
