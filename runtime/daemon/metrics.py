"""Prometheus metrics of a running daemon (``fpgashare daemon --metrics-port N``).

Frame outcomes and latencies are counted as frames end; the fabric's figures (reconfigurations,
port busy time, slot utilization) are read from the engine when Prometheus scrapes. Everything
lives in the daemon's own registry, so two daemons in one process (tests) do not collide.
"""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily

LOOP_BUCKETS = (0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 1.0)
OUTCOMES = ("on_time", "late", "dropped", "error", "done")      #: what a frame or image ends as (stats.py)
LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.033, 0.05, 0.1, 0.2, 0.5, 1.0)


class DaemonMetrics:
    def __init__(self, engine, clock) -> None:
        self.registry = CollectorRegistry()
        self.frames = Counter("fpgashare_frames", "Frames by pipeline and outcome", ["pipeline", "outcome"],
                              registry=self.registry)
        self.latency = Histogram("fpgashare_frame_latency_seconds", "Release to result, daemon time",
                                 ["pipeline"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.loop_delay = Histogram("fpgashare_loop_dispatch_delay_seconds",
                                    "How late the daemon's loop ran a timer after it was due (wall time)",
                                    buckets=LOOP_BUCKETS, registry=self.registry)
        self.registry.register(_FabricCollector(engine, clock))
        self.server = None

    def frame_ended(self, pipeline: str, outcome: str, latency_s: float | None) -> None:
        self.frames.labels(pipeline, outcome).inc()
        if latency_s is not None:
            self.latency.labels(pipeline).observe(latency_s)

    def forget(self, pipeline: str) -> None:
        """Drop an ended pipeline's series (the daemon keeps the newest ended ones only: stats.py)."""
        for outcome in OUTCOMES:
            with contextlib.suppress(KeyError):
                self.frames.remove(pipeline, outcome)
        with contextlib.suppress(KeyError):
            self.latency.remove(pipeline)

    def serve(self, port: int, address: str = "127.0.0.1") -> int:
        """Serve /metrics over HTTP; returns the port (0 picks a free one)."""
        self.server, _ = start_http_server(port, addr=address, registry=self.registry)
        return self.server.server_port

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


class _FabricCollector:
    """Reads the engine at scrape time (plain attribute reads of numbers the engine thread writes)."""

    def __init__(self, engine, clock) -> None:
        self.engine, self.clock = engine, clock

    def collect(self):
        engine = self.engine
        port = engine.slots.port
        yield GaugeMetricFamily("fpgashare_reconfigurations", "Partial loads so far", value=port.loads)
        yield GaugeMetricFamily("fpgashare_port_busy_seconds", "Configuration port busy time", value=port.busy_s)
        now = max(self.clock.now(), 1e-9)
        yield GaugeMetricFamily("fpgashare_slot_utilization", "Fraction of slot time spent computing",
                                value=engine.slot_busy_s / (now * len(engine.slots.slots)))
