"""Counters, gauges and histograms of one process, and the Prometheus text
format written by hand (no dependency: the format is a few lines of text).

Recording is a dict lookup and an addition under a lock: a worker's 16
threads share the figures, and ``+=`` is not atomic between threads. The
figures of every request (requests, durations, bytes, errors, statements)
are not recorded one by one but added up in batches from the requests'
records (``serving.py``, ``instruments.Instruments.add_records``). Labels
are a tuple of values in the order of the metric's label names; every label
set is bounded by construction (route templates, status classes, grants,
reasons from fixed lists), never a raw path or a user's input.

A figure set's ``snapshot`` is plain JSON (``multiprocess.py`` writes it to a
file per worker); ``exposition`` writes merged snapshots as the text format.
"""
import bisect
import math
import threading
from collections.abc import Iterable, Sequence
from typing import cast

from ..jsonio import JsonObject

# Seconds: from a cached read (a few ms) to a long report (10 s).
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"

Labels = tuple[object, ...]     # label values, in the order of the metric's label names
# A series' figure: a number, or a histogram's [bucket counts..., +Inf, sum].
Figure = float | list[float]


class Metric:
    def __init__(self, registry: "Registry", kind: str, name: str, help_text: str,
                 labels: Iterable[str] = (), buckets: tuple[float, ...] | None = None) -> None:
        self.kind, self.name, self.help, self.labels = kind, name, help_text, tuple(labels)
        self.buckets = buckets
        self.series: dict[Labels, Figure] = {}
        self._lock = registry.lock

    def inc(self, labels: Labels = (), amount: float = 1) -> None:
        with self._lock:
            self.series[labels] = cast(float, self.series.get(labels, 0)) + amount

    def inc_by(self, amount: float) -> None:
        """An unlabelled counter's ``inc`` by ``amount`` (a callback's shape)."""
        self.inc((), amount)

    def set(self, value: float, labels: Labels = ()) -> None:
        with self._lock:
            self.series[labels] = value

    def observe(self, value: float, labels: Labels = ()) -> None:
        """A histogram's observation: one bucket counted here, the cumulative
        counts only when written out."""
        buckets = cast(tuple[float, ...], self.buckets)     # a histogram has them
        index = bisect.bisect_left(buckets, value)
        with self._lock:
            counts = cast("list[float] | None", self.series.get(labels))
            if counts is None:
                zeros: list[float] = [0]
                counts = self.series[labels] = zeros * (len(buckets) + 2)
            counts[index] += 1
            counts[-1] += value


class Registry:
    """The figures of one process (one gunicorn worker)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.metrics: dict[str, Metric] = {}

    def counter(self, name: str, help_text: str, labels: Iterable[str] = ()) -> Metric:
        return self._add(Metric(self, COUNTER, name, help_text, labels))

    def gauge(self, name: str, help_text: str, labels: Iterable[str] = ()) -> Metric:
        return self._add(Metric(self, GAUGE, name, help_text, labels))

    def histogram(self, name: str, help_text: str, labels: Iterable[str] = (),
                  buckets: Iterable[float] = DURATION_BUCKETS) -> Metric:
        return self._add(Metric(self, HISTOGRAM, name, help_text, labels, tuple(buckets)))

    def _add(self, metric: Metric) -> Metric:
        self.metrics[metric.name] = metric
        return metric

    def snapshot(self) -> dict[str, JsonObject]:
        """``{name: {kind, help, labels, buckets, series: [[label values, value]]}}``."""
        with self.lock:
            return {metric.name: {
                "kind": metric.kind, "help": metric.help, "labels": list(metric.labels),
                "buckets": list(metric.buckets or ()),
                "series": [[list(labels), list(value) if isinstance(value, list) else value]
                           for labels, value in metric.series.items()]}
                for metric in self.metrics.values()}

    def reset(self) -> None:
        """Forget every figure (a forked child starts from zero)."""
        with self.lock:
            for metric in self.metrics.values():
                metric.series.clear()


def merge(snapshots: Iterable[dict[str, JsonObject]]) -> dict[str, JsonObject]:
    """Several processes' snapshots as one: counters and histograms add up,
    and so do gauges (in-flight requests, connections in use: an instance's
    total is its workers' sum). The first snapshot names the metrics."""
    merged: dict[str, JsonObject] = {}
    for snapshot in snapshots:
        for name, metric in snapshot.items():
            target = merged.setdefault(name, {**metric, "series": {}})["series"]
            for labels, value in metric["series"]:
                key = tuple(labels)
                if isinstance(value, list):
                    current = target.get(key)
                    target[key] = value if current is None else [a + b for a, b in zip(current, value)]
                else:
                    target[key] = target.get(key, 0) + value
    return merged


def exposition(merged: dict[str, JsonObject]) -> str:
    """The Prometheus text format (version 0.0.4) of ``merge``'s result."""
    lines: list[str] = []
    for name, metric in sorted(merged.items()):
        lines.append(f"# HELP {name} {_escape_help(metric['help'])}")
        lines.append(f"# TYPE {name} {metric['kind']}")
        labels = metric["labels"]
        # Sorted by the values' text: a value of another type (a stray None)
        # must not make every scrape fail.
        for values, value in sorted(metric["series"].items(), key=_label_text):
            pairs = [f'{label}="{_escape(v)}"' for label, v in zip(labels, values)]
            if metric["kind"] != HISTOGRAM:
                lines.append(f"{name}{_braces(pairs)} {_number(value)}")
                continue
            cumulative = 0
            for bound, count in zip(list(metric["buckets"]) + [math.inf], value[:-1]):
                cumulative += count
                le = "+Inf" if bound == math.inf else _number(bound)
                le_pair = 'le="%s"' % le
                lines.append(f"{name}_bucket{_braces(pairs + [le_pair])} {cumulative}")
            lines.append(f"{name}_sum{_braces(pairs)} {_number(value[-1])}")
            lines.append(f"{name}_count{_braces(pairs)} {cumulative}")
    return "\n".join(lines) + "\n"


def _label_text(item: tuple[tuple[object, ...], object]) -> tuple[str, ...]:
    return tuple(map(str, item[0]))


def _braces(pairs: Sequence[str]) -> str:
    return "{" + ",".join(pairs) + "}" if pairs else ""


def _number(value: object) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")
