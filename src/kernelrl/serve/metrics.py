"""The service's Prometheus metrics, in a registry of its own (two services in one process never share
counts). Rates (evaluations/s) are Prometheus's `rate()` of the counters."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from kernelrl.results import EvalResult

_LATENCY_BUCKETS = (0.05, 0.25, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280)


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.verdicts = Counter("kernelrl_verdicts", "Evaluated items by verdict status", ["status"],
                                registry=r)
        self.no_verdicts = Counter("kernelrl_no_verdicts", "Answers without a verdict (deadline, full queue, "
                                   "evaluator failure)", registry=r)
        self.by_device = Counter("kernelrl_evaluations_by_device", "Evaluated items by the "
                                 "device that judged them", ["device"], registry=r)
        self.cache_hits = Counter("kernelrl_cache_hits", "Items answered without an evaluation of their own: "
                                  "'journal' (stored), 'joined' (another request's evaluation), "
                                  "'result_cache' (the evaluator's result cache)", ["source"], registry=r)
        self.rejected = Counter("kernelrl_rejected_requests", "Requests refused, by reason", ["reason"],
                                registry=r)
        self.queue_items = Gauge("kernelrl_queue_items", "Items admitted and not yet answered", registry=r)
        self.in_flight = Gauge("kernelrl_in_flight_items",
                               "Items handed to the evaluators and not yet answered", registry=r)
        self.queue_wait = Histogram("kernelrl_queue_wait_seconds", "From admission to the answer, less the "
                                                                   "evaluation's own wall time",
                                    buckets=_LATENCY_BUCKETS, registry=r)
        self.latency = Histogram("kernelrl_item_seconds", "From admission to the answer",
                                 buckets=_LATENCY_BUCKETS, registry=r)

    def observe(self, result: EvalResult, seconds: float) -> None:
        self.verdicts.labels(result.status.value).inc()
        self.latency.observe(seconds)
        if result.no_verdict:
            self.no_verdicts.inc()
        if result.cached:
            self.cache_hits.labels("result_cache").inc()
        if result.environment is not None:
            self.by_device.labels(result.environment.device_name).inc()
        self.queue_wait.observe(max(0.0, seconds - result.wall_time_s))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
