"""Evaluation scaling over GPUs: fresh candidates (every one unseen, as in RL) on 1..N GPUs of one host,
through each way kernelrl spreads evaluations, in one run on one machine:

- `multi`: `MultiDeviceEvaluator` (every device's evaluator in this one process),
- `ray`:   the Ray pool (`RayScorer`: one actor process per GPU) on a Ray cluster this script starts,
- `serve`: `kernelrl serve --ray auto` fronting that pool, called through `Client` (HTTP on loopback).

Each row: a new scorer on the host's first `gpus` GPUs (`ray` and `serve`: a Ray cluster started with that
many), started (`warm_up`: every evaluator up, so the warm-up reaches each; the items each answered are in the
row's `per_actor`), warmed with one fresh copy of every problem per GPU (audits, judge state, baselines: not
counted; the baseline cache lives in `--cache-dir`, shared by every row), then `--rounds` x the level-1
reference solutions, each made fresh (`throughput.fresh`: Triton's cache and the result cache miss), in one
call. Reports evaluations/min, scaling against the same way's one-GPU row, the phase split, the first answer
and the last tenth of the batch, and the timer's rerun spread (median speedup RSE) with every GPU busy.

  python bench/scaling.py --via multi,ray,serve --gpus 1,2 --rounds 2 --json scaling.json  # a 2-GPU host
  python bench/scaling.py --device cpu --via multi,ray --only level0/1_relu --rounds 1     # on the CPU
On the CPU (`--device cpu`) a "GPU" is one CPU evaluator: `multi` runs that many CPU evaluators in this
process, `ray` and `serve` that many CPU actors; only the code paths mean anything there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_stats import batch_stats  # noqa: E402
from candidate_mix import fresh, solutions  # noqa: E402

from kernelrl import EvaluatorSettings, VerdictSettings, load_suite  # noqa: E402
from kernelrl.evaluate.scorer import ScorerBase  # noqa: E402

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}  # a one-host cluster on loopback


def ray_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ray.scripts.scripts", *args], env=env, check=True,
                          capture_output=True, text=True, timeout=300)


@contextlib.contextmanager
def ray_cluster(gpus: int, device: str) -> Iterator[dict]:
    """A one-host Ray cluster (`ray start --head`) with the host's first `gpus` GPUs, stopped after. Yields
    the environment its drivers need."""
    env = {**os.environ, **RAY_ENV}
    if device != "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(k) for k in range(gpus))
    ray_cli("stop", "--force", env=env)
    ray_cli("start", "--head", f"--num-gpus={gpus if device != 'cpu' else 0}", "--include-dashboard=false",
            "--disable-usage-stats", env=env)
    try:
        yield env
    finally:
        ray_cli("stop", "--force", env=env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def scorer(via: str, gpus: int, args, profile: str, cache_dir: Path) -> Iterator[ScorerBase]:
    """The scorer of one row, on the host's first `gpus` GPUs (CPU: `gpus` CPU evaluators)."""
    training = profile == "training"
    settings = EvaluatorSettings.training() if training else EvaluatorSettings()
    verdict = VerdictSettings.training() if training else VerdictSettings()
    overrides = dict(result_cache=False, cache_dir=cache_dir, inductor_baseline=not args.no_inductor)
    if args.standbys is not None:  # multi and ray: sandboxes started ahead of their candidates, per GPU
        overrides["standby_sandboxes"] = args.standbys
    if args.work_queues is not None:  # multi and ray: CUDA's hardware queues a context (0: CUDA's default)
        overrides["device_work_queues"] = args.work_queues or None
    cpu = args.device == "cpu"
    if via == "multi":
        from kernelrl.evaluate.local import open_scorer

        devices = ["cpu"] * gpus if cpu else [f"cuda:{k}" for k in range(gpus)]
        with open_scorer(devices, settings, verdict, **overrides) as opened:
            yield opened
        return
    from kernelrl.serve.ray_pool import RayScorer

    with ray_cluster(gpus, args.device) as env:
        os.environ.update(RAY_ENV)  # this process is the pool's driver
        if via == "ray":  # it joins the cluster and leaves it (ray.shutdown) when closed
            with RayScorer("auto", namespace=f"bench-{uuid.uuid4().hex[:8]}", settings=settings,
                           verdict=verdict, cpu_actors=gpus if cpu else None, device="cpu" if cpu else "cuda",
                           **overrides) as pool:
                yield pool
            return
        with _served(gpus, args, env, training, cache_dir) as client:
            yield client


@contextlib.contextmanager
def _served(gpus: int, args, env: dict, training: bool, cache_dir: Path) -> Iterator[ScorerBase]:
    from kernelrl.serve.client import Client

    port, run = free_port(), Path(tempfile.mkdtemp(prefix="kernelrl-scaling-serve-"))
    command = [sys.executable, "-m", "kernelrl.cli", "serve", "--ray", "auto", "--port", str(port),
               "--journal", str(run / "journal.sqlite"), "--no-cache", "--cache-dir", str(cache_dir),
               "--device", "cpu" if args.device == "cpu" else "cuda"]
    command += ["--ray-cpu-actors", str(gpus)] if args.device == "cpu" else []
    command += ["--training-profile"] if training else []
    with (run / "serve.log").open("w") as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 600
        while not _ready(url):
            if server.poll() is not None or time.monotonic() > deadline:
                log_tail = (run / "serve.log").read_text()[-3000:]
                raise RuntimeError(f"kernelrl serve did not come up: {log_tail}")
            time.sleep(0.5)
        with Client(url, max_in_flight=1024) as client:
            yield client
    finally:
        server.terminate()
        server.wait(60)


def _ready(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


# what a sandbox's start phase spent, from its timeline's sandbox_* marks (EvalResult.timeline): its CUDA
# context (in the standby, before its candidate came), waiting for a standby still starting, confinement after
START_UP_STEPS = ("cuda_context", "standby_wait", "confine")


def start_up(timeline: dict[str, float]) -> dict[str, float]:
    steps = {"cuda_context": ("sandbox_imports", "sandbox_device"),
             "standby_wait": ("start", "sandbox_assigned"), "confine": ("sandbox_assigned", "import")}
    return {step: round(max(0.0, timeline[end] - timeline[begin]), 4) for step, (begin, end) in steps.items()
            if begin in timeline and end in timeline}


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def per_actor(opened: ScorerBase) -> dict[str, int]:
    """Items answered so far per Ray actor, or per device of a `MultiDeviceEvaluator` (empty: the service)."""
    counts = getattr(opened, "counts", None)
    if isinstance(counts, list):
        return {f"device{k}": n for k, n in enumerate(counts)}
    return {str(name): n for name, n in counts.items()} if isinstance(counts, dict) else {}


def run_row(via: str, gpus: int, args, profile: str, cache_dir: Path, chosen) -> dict:
    suite = load_suite()
    tag = uuid.uuid4().hex[:8]
    with scorer(via, gpus, args, profile, cache_dir) as opened:
        started = time.monotonic()
        # every evaluator started before the warm-up batch: else the first one ready takes all of it its slots
        # allow (the training profile's: 60) and the others meet every problem cold in the measured batch
        opened.warm_up()
        warm = [(suite.get(pid), fresh(code, f"{tag}-warm-{k}"))
                for k in range(gpus) for _, pid, code in chosen]
        warmed = list(opened.evaluate_many(warm))
        warm_s = time.monotonic() - started
        warm_counts = per_actor(opened)
        print(f"{via} x{gpus} {profile}: warm-up {len(warm)} evaluations in {warm_s:.1f} s "
              f"({sum(r.status.value == 'correct' for r in warmed)} correct"
              + (f", per actor {sorted(warm_counts.values())}" if warm_counts else "") + ")", flush=True)
        items = [(suite.get(pid), fresh(code, f"{tag}-{n}-{k}"))
                 for n in range(args.rounds) for k, (_, pid, code) in enumerate(chosen)]
        started_epoch, started = time.time(), time.monotonic()
        finished: list[float] = []  # seconds from the call to each answer: the batch's fill and tail
        results: list = [None] * len(items)
        for index, result in opened.evaluate_indexed(items):
            results[index] = result
            finished.append(time.monotonic() - started)
        total = time.monotonic() - started
        counts = {name: n - warm_counts.get(name, 0) for name, n in per_actor(opened).items()}
    row = {"via": via, "gpus": gpus, "profile": profile, "standbys": args.standbys,
           "warm_up_s": round(warm_s, 1), "per_actor": {"warm_up": warm_counts, "batch": counts},
           **batch_stats(results, total, started_epoch),
           "no_verdict": sum(r.no_verdict for r in results),
           # first answer, and the last tenth of the batch: a fixed cost per batch, not per evaluation
           "first_answer_s": round(finished[0], 2),
           "last_tenth_s": round(finished[-1] - finished[int(0.9 * (len(finished) - 1))], 2),
           "results": [{"problem": r.problem_id, "status": r.status.value, "wall_s": r.wall_time_s,
                        "phases_s": r.phases_s, "message": r.message[:200],
                        # an evaluation retried alone: why its first attempt, beside others, failed
                        "first_attempt": next((line[:300] for line in r.log.splitlines()
                                               if line.startswith("[kernelrl] first attempt")), None),
                        "speedup_vs_eager": r.timing.speedup_vs_eager if r.timing else None,
                        "speedup_rse": r.timing.speedup_rse if r.timing else None,
                        "start_up_s": start_up(r.timeline)} for r in results]}
    row["median_start_up_s"] = {step: _median([x["start_up_s"][step] for x in row["results"]
                                               if step in x["start_up_s"]]) for step in START_UP_STEPS}
    print(f"{via} x{gpus} {profile}: {row['evals_per_min']} evals/min ({row['evaluations']} in "
          f"{row['total_s']} s), statuses {row['statuses']}, no verdict {row['no_verdict']}, first answer "
          f"{row['first_answer_s']} s, last tenth {row['last_tenth_s']} s, median speedup RSE "
          f"{row['median_speedup_rse']}, median phases {row['median_phases_s']}, median start-up steps "
          f"{row['median_start_up_s']}", flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda",
                        help="cuda (the host's GPUs) or cpu (the code paths only)")
    parser.add_argument("--via", default="multi,ray,serve", help="comma-separated: multi, ray, serve")
    parser.add_argument("--gpus", default="1,2", help="comma-separated GPU counts, each a row per way")
    parser.add_argument("--profile", default="default", help="default, training or default,training")
    parser.add_argument("--only", default="level1/", help="problem id prefix of the reference solutions used")
    parser.add_argument("--rounds", type=int, default=2, help="fresh copies of each solution per row")
    parser.add_argument("--cache-dir", type=Path,
                        help="baseline cache shared by the rows (default: a new one)")
    parser.add_argument("--no-inductor", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--standbys", type=int, default=None,
                        help="standby sandboxes per GPU (multi and ray; default: the profile's)")
    parser.add_argument("--work-queues", type=int, default=None,
                        help="CUDA hardware work queues of each context (multi and ray; 0: CUDA's default of "
                             "8; default: the evaluator's, 1)")
    parser.add_argument("--json", type=Path, help="write the rows here (after each row)")
    args = parser.parse_args(argv)
    if args.no_inductor and "serve" in args.via:
        parser.error("--no-inductor: the service times against its own settings (inductor baseline on)")
    chosen = solutions(args.only)
    if not chosen:
        parser.error(f"no reference solution under {args.only!r}")
    cache_dir = args.cache_dir or Path(tempfile.mkdtemp(prefix="kernelrl-scaling-"))
    rows: list[dict] = []
    for profile in args.profile.split(","):
        for via in args.via.split(","):
            for gpus in (int(g) for g in args.gpus.split(",")):
                row = run_row(via, gpus, args, profile, cache_dir, chosen)
                row["work_queues"] = args.work_queues
                one = next((r for r in rows if (r["via"], r["gpus"], r["profile"]) == (via, 1, profile)),
                           None)
                if one is not None and gpus > 1:
                    row["scaling"] = round(row["evals_per_min"] / one["evals_per_min"], 3)
                    row["efficiency"] = round(row["scaling"] / gpus, 3)
                    print(f"{via} x{gpus} {profile}: {row['scaling']}x one GPU, "
                          f"{row['efficiency']:.0%} of linear", flush=True)
                rows.append(row)
                if args.json is not None:
                    args.json.write_text(json.dumps({"device": args.device, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
