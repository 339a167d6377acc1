"""The example project's metrics: the OpenTelemetry SDK, and every process's instruments
(the app's, ``usergroups.telemetry``, and any the site adds) in one Prometheus scrape at
``/metrics``, whichever gunicorn worker answers it. On with ``DJANGO_METRICS=true``.

Each process meters with the SDK into the OpenTelemetry Prometheus exporter's reader, on a
registry of its own, and every ``DJANGO_METRICS_INTERVAL_SECONDS`` (and at exit) writes
what that registry holds into its own file of prometheus_client's multiprocess directory
(``PROMETHEUS_MULTIPROC_DIR``). ``/metrics`` is prometheus_client's Django view in
multiprocess mode: it adds up every process's file. ``example_project/gunicorn.conf.py``
empties the directory when gunicorn starts and forgets a dead worker's gauges.

The OpenTelemetry exporter alone serves one process's metrics, and prometheus_client's
multiprocess mode takes only its own metric classes (docs/deployment.md, "Metrics", says
why this way). So here is the one link between them, :class:`ProcessFile`: samples as the exporter
names them, written with prometheus_client's multiprocess values.
"""

import atexit
import os
import threading
from collections.abc import Iterator
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from opentelemetry import metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, multiprocess, values
from prometheus_client.metrics_core import Metric

# Each process's gauges keep their own series (a "pid" label); gone with the process.
GAUGE_MODE = "liveall"


class ProcessFile:
    """This process's share of the scrape: ``registry``'s samples, in its own file."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.values: dict[tuple, Any] = {}
        self.lock = threading.Lock()

    def write(self) -> None:
        with self.lock:
            for family in self.registry.collect():
                for sample_name, labels, value in samples_to_write(family):
                    self.value_of(family, sample_name, labels).set(value)

    def value_of(self, family: Metric, sample_name: str, labels: dict[str, str]) -> Any:
        key = (family.type, family.name, sample_name, tuple(sorted(labels.items())))
        if key not in self.values:
            self.values[key] = values.ValueClass(
                family.type,
                family.name,
                sample_name,
                tuple(name for name, _ in key[3]),
                tuple(value for _, value in key[3]),
                family.documentation,
                multiprocess_mode=GAUGE_MODE,
            )
        return self.values[key]


def samples_to_write(family: Metric) -> Iterator[tuple[str, dict[str, str], float]]:
    """``family``'s samples as the multiprocess files hold them: a counter's total, a
    gauge, a histogram's sum and each bucket's own count (the scrape adds up the buckets
    and counts); labels with an empty value left out, as Prometheus reads them."""
    below: dict[tuple, float] = {}  # a histogram's cumulative count at the last bucket
    for sample in family.samples:
        labels = {name: value for name, value in sample.labels.items() if value != ""}
        suffix = sample.name[len(family.name) :]
        if family.type == "counter" and suffix == "_total" or family.type == "gauge":
            yield sample.name, labels, sample.value
        elif family.type == "histogram" and suffix == "_sum":
            yield sample.name, labels, sample.value
        elif family.type == "histogram" and suffix == "_bucket":
            series = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
            yield sample.name, labels, sample.value - below.get(series, 0.0)
            below[series] = sample.value


def start() -> ProcessFile:
    """Meter this process with the SDK; write its samples now and then, and at exit."""
    registry = CollectorRegistry()
    reader = PrometheusMetricReader(registry=registry, disable_target_info=True)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    process_file = ProcessFile(registry)
    interval = settings.METRICS_INTERVAL_SECONDS
    stopped = threading.Event()

    def every_interval() -> None:
        while not stopped.wait(interval):
            process_file.write()

    def at_exit() -> None:
        stopped.set()
        process_file.write()
        multiprocess.mark_process_dead(os.getpid())  # its gauges go; its counts stay

    threading.Thread(target=every_interval, name="metrics-file", daemon=True).start()
    atexit.register(at_exit)
    return process_file


class MetricsConfig(AppConfig):
    """Installed by settings.py when ``DJANGO_METRICS`` is true."""

    name = "example_project.metrics"
    label = "example_metrics"

    def ready(self) -> None:
        start()
