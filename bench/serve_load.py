"""The reward service under load against in-process `evaluate_many` on the same machine: N clients x M fresh
candidates each, evaluations/s, per-item latency (p50/p99) and the HTTP overhead.

One evaluator serves both modes (no second judge on the GPU): "in-process" is N threads calling
`evaluate_many` on it, as N trainer ranks sharing one evaluator would; "service" is N threads each with its
own `Client` to a `kernelrl serve` app (uvicorn on loopback, in this process, over the same evaluator). The
HTTP stack shares this process's interpreter with the evaluator's threads, so the overhead measured is an
upper bound. Every candidate is fresh (a unique tag in each Triton function and a unique module constant, as
in bench/throughput.py): no Triton cache, result cache or journal hit. Runs alternate (A B B A ...) so drift
does not favour one mode. Stops by itself; binds loopback only.

  python bench/serve_load.py --device cpu --only level0/1_relu --clients 4 --items 2 --rounds 1
  python bench/serve_load.py --device cuda --only level1/ --clients 16 --items 4 --rounds 3 --json OUT.json
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from candidate_mix import fresh, solutions  # noqa: E402

from kernelrl import VerdictSettings, load_suite, open_scorer  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def batches(chosen, clients: int, items: int, tag: str) -> list[list[tuple[str, str]]]:
    """Per client, `items` (problem id, fresh code) pairs cycling over the chosen solutions."""
    out = []
    for c in range(clients):
        out.append([(pid, fresh(code, f"{tag}-{c}-{k}"))
                    for k in range(items) for _, pid, code in [chosen[(c * items + k) % len(chosen)]]])
    return out


def drive(make_scorer, work: list[list[tuple[str, str]]], problems, verdict) -> dict:
    """Every client's batch at once, each on its own thread and scorer; per-item latency from the start."""
    latencies: list[float] = []
    statuses: list[str] = []
    lock = threading.Lock()
    start = threading.Event()
    errors: list[BaseException] = []

    def client(batch) -> None:
        scorer = make_scorer()
        try:
            start.wait()
            t0 = time.monotonic()
            for result in scorer.evaluate_many([(problems[pid], code) for pid, code in batch], kind="code",
                                               verdict=verdict):
                with lock:
                    latencies.append(time.monotonic() - t0)
                    statuses.append("no_verdict" if result.no_verdict else result.status.value)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(b,)) for b in work]
    for t in threads:
        t.start()
    began = time.monotonic()
    start.set()
    for t in threads:
        t.join()
    wall = time.monotonic() - began
    if errors:
        raise errors[0]
    n = len(latencies)
    return {"items": n, "wall_s": round(wall, 3), "evals_per_s": round(n / wall, 4),
            "evals_per_min": round(60 * n / wall, 2), "latency_p50_s": round(percentile(latencies, 0.5), 3),
            "latency_p99_s": round(percentile(latencies, 0.99), 3),
            "statuses": {s: statuses.count(s) for s in sorted(set(statuses))}}


def parser_of() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", default="level1/", help="problem id prefix of the reference solutions used")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--items", type=int, default=4, help="fresh candidates per client per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs per mode (interleaved)")
    parser.add_argument("--profile", choices=["default", "training"], default="training")
    parser.add_argument("--no-inductor", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--max-concurrency", type=int, default=None)
    parser.add_argument("--json", type=Path, help="write the rows here")
    return parser


@contextlib.contextmanager
def served(service) -> Iterator[str]:
    """`kernelrl serve`'s app for `service` on a loopback port, in a thread of this process; yields its
    URL."""
    import uvicorn

    from kernelrl.serve.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()


def interleaved(args, chosen, problems, verdict, modes: dict) -> list[dict]:
    """`--rounds` runs of each mode, alternating which goes first; one row a run."""
    order = []
    for r in range(args.rounds):
        order += ["in-process", "service"] if r % 2 == 0 else ["service", "in-process"]
    rows = []
    for k, mode in enumerate(order):
        work = batches(chosen, args.clients, args.items, f"{mode}-{k}-{uuid.uuid4().hex[:6]}")
        row = {"mode": mode, "run": k, "clients": args.clients, "items_per_client": args.items,
               "profile": args.profile, **drive(modes[mode], work, problems, verdict)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def summarize(rows: list[dict]) -> dict:
    """Per mode the median throughput and latencies over its runs, and the service's overhead."""
    summary = {}
    for mode in ("in-process", "service"):
        runs = [r for r in rows if r["mode"] == mode]
        summary[mode] = {"evals_per_min_median": statistics.median(r["evals_per_min"] for r in runs),
                         "evals_per_min": [r["evals_per_min"] for r in runs],
                         "latency_p50_s_median": statistics.median(r["latency_p50_s"] for r in runs),
                         "latency_p99_s_median": statistics.median(r["latency_p99_s"] for r in runs)}
    inproc = summary["in-process"]["evals_per_min_median"]
    over_http = summary["service"]["evals_per_min_median"]
    summary["http_overhead"] = round(inproc / over_http - 1, 4) if over_http else None
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = parser_of()
    args = parser.parse_args(argv)

    from kernelrl.serve import Client
    from kernelrl.serve.journal import Journal
    from kernelrl.serve.service import RewardService, ServiceSettings

    suite = load_suite()
    problems = {p.id: p for p in suite}
    chosen = solutions(args.only)
    if not chosen:
        parser.error(f"no reference solutions under {args.only!r}")
    base = VerdictSettings(inductor_baseline=not args.no_inductor)
    verdict = (VerdictSettings.training(inductor_baseline=not args.no_inductor) if args.profile == "training"
               else base)
    cache = Path(tempfile.mkdtemp(prefix="kernelrl-serve-load-"))
    overrides = {"cache_dir": cache}
    if args.max_concurrency:
        overrides["max_concurrency"] = args.max_concurrency
    evaluator = open_scorer(args.device, **overrides)
    with evaluator:
        evaluator.warm_up()
        # audits, judge state and baselines of every problem, as a training run has them after its first step
        warm = list(evaluator.evaluate_many([(problems[pid], fresh(code, f"warm-{uuid.uuid4().hex[:8]}"))
                                             for _, pid, code in chosen], kind="code", verdict=base))
        print(f"warm-up: {len(warm)} problems, {sum(r.correct for r in warm)} correct", flush=True)
        journal = Journal(cache / "journal.sqlite")
        service = RewardService(evaluator, problems,
                                ServiceSettings(max_batch=max(512, args.items),
                                                max_queued_items=max(2048, 4 * args.items * args.clients)),
                                journal, device=args.device)
        with served(service) as url:
            Client(url).warm_up()
            modes = {"in-process": lambda: evaluator, "service": lambda: Client(url)}
            rows = interleaved(args, chosen, problems, verdict, modes)
        service.close()
    summary = summarize(rows)
    print(json.dumps({"summary": summary, "device": args.device, "candidates": len(chosen)}, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "argv": sys.argv[1:],
                                         "settings": dataclasses.asdict(verdict)}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
