"""The app's metrics and spans as a host's OpenTelemetry SDK would get them: the SDK's
in-memory metric reader and span exporter, installed once per process as the global
providers (the API allows one provider per process), read by the fixture
``telemetry_reader`` of tests/conftest.py.

Counters and histograms are read as deltas: what a test sees is what it did.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, Gauge, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.leaks import secrets_in


@dataclass(frozen=True)
class Point:
    """One data point of an instrument: its attributes and its value (a sum, a gauge's
    value, or a histogram's count and sum)."""

    instrument: str
    unit: str
    attributes: dict[str, Any]
    value: float
    count: int = 0  # histograms: how many were recorded


class RecordedTelemetry:
    """What the app's instruments and spans recorded since :meth:`start`."""

    def __init__(self) -> None:
        delta = AggregationTemporality.DELTA
        self.reader = InMemoryMetricReader(preferred_temporality={Counter: delta, Histogram: delta})
        self.exporter = InMemorySpanExporter()
        meter_provider = MeterProvider(metric_readers=[self.reader])
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        metrics.set_meter_provider(meter_provider)
        trace.set_tracer_provider(tracer_provider)
        # The API keeps the first provider a process sets: ours must be that one.
        assert metrics.get_meter_provider() is meter_provider, "a meter provider was set before"
        assert trace.get_tracer_provider() is tracer_provider, "a tracer provider was set before"
        self.points: list[Point] = []
        self.gauges: dict[str, list[Point]] = {}

    def start(self) -> None:
        """Forget what was recorded so far (by earlier tests of the process too)."""
        self.reader.get_metrics_data()
        self.exporter.clear()
        self.points, self.gauges = [], {}

    def collect(self) -> list[Point]:
        """Every point recorded since :meth:`start`, and each gauge's latest values."""
        gauges: dict[str, list[Point]] = {}
        for metric in _metrics(self.reader.get_metrics_data()):
            for data_point in metric.data.data_points:
                count = getattr(data_point, "count", 0)
                value = data_point.sum if count else data_point.value
                attributes = dict(data_point.attributes or {})
                point = Point(metric.name, metric.unit, attributes, value, count)
                if isinstance(metric.data, Gauge):
                    gauges.setdefault(metric.name, []).append(point)
                else:
                    self.points.append(point)
        self.gauges.update(gauges)
        return self.points + [point for points in self.gauges.values() for point in points]

    def total(self, instrument: str, **attributes: Any) -> float:
        """The sum of ``instrument``'s points whose attributes include ``attributes``
        (histograms: how many were recorded)."""
        return sum(
            point.count or point.value
            for point in self.collect()
            if point.instrument == instrument and attributes.items() <= point.attributes.items()
        )

    def by(self, instrument: str, attribute: str) -> dict[Any, float]:
        """``instrument``'s totals by the value of one attribute (None: without it)."""
        totals: dict[Any, float] = {}
        for point in self.collect():
            if point.instrument == instrument:
                key = point.attributes.get(attribute)
                totals[key] = totals.get(key, 0) + (point.count or point.value)
        return totals

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans() if name in (None, span.name)]

    def leaks(self) -> list[str]:
        """Every secret-shaped string in what was recorded: metric attributes, and span
        names, attributes, events and statuses."""
        texts = [f"{point.instrument} {point.attributes}" for point in self.collect()]
        for span in self.spans():
            events = [(event.name, dict(event.attributes or {})) for event in span.events]
            texts.append(
                f"{span.name} {dict(span.attributes or {})} {events} {span.status.description}"
            )
        return [secret[:8] + "…" for text in texts for secret in secrets_in(text)]


def _metrics(data: Any) -> Iterator[Any]:
    if data is None:
        return
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            yield from scope_metrics.metrics


_installed: RecordedTelemetry | None = None


def installed() -> RecordedTelemetry:
    """The process's recorder, installed on first use."""
    global _installed
    if _installed is None:
        _installed = RecordedTelemetry()
    return _installed
