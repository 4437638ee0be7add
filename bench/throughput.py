"""Evaluator throughput on a fixed mix of candidates: evaluations per minute and per-evaluation overhead, with
and without the warm pool (zygote), serial and batched (`Evaluator.evaluate_many`).

The mix (built-in suite, shipped examples and reference solutions): correct Triton kernels, wrong outputs,
a crashing candidate (os.abort), a slow-but-correct one (tiny blocks, four launches per call). Each mode
first evaluates every candidate of the mix once (warm-up: judge references, audits, baselines and each
candidate's compile cache; not counted; one Evaluator serves every mode), then evaluates the mix `--rounds`
times per mode.

Overhead of one evaluation = its wall time minus the GPU time its timed calls had to take
((reps + warm-up calls) x the candidate's median), i.e. everything that is not the candidate's GPU work;
also by kind of candidate, and "outside the timed loop": wall time minus the loop's length (calls x the
median rep's wall time, which holds the timer's own GPU work per call: input refill, L2 flush, launch cover).
On the CPU nothing is timed, so the overhead is the wall time.

  python bench/throughput.py --device cpu                    # this machine (Triton interpreter)
  python bench/throughput.py --device cuda --json OUT.json   # a GPU machine

Fresh candidates (`--modes fresh-candidates`, the RL steady state): every evaluation's candidate is new: its
source carries a unique tag inside each @triton.jit function (Triton's cache key and the candidate's own
Triton cache directory miss) and a unique module constant (the result cache misses: its key ignores comments);
caches live in an empty directory; each problem's audit, judge state and eager/Inductor baselines are warmed
first (one evaluation of a differently tagged copy per problem, not counted), as in a training run. Reports
evaluations/min, the phase split (queue for slots, prepare, sandbox start, import, first trial = Triton
compile + first forward on a GPU, correctness, census, timing-token wait, timing,
baselines), the timing slot's busy share and the GPU's idle time (from the evaluations'
timelines; from NVML or nvidia-smi samples where available). `--modes grpo-batch`: one
reward batch of `--batch` completions (correct, wrong, compile-error and format-error
candidates mixed, all fresh) through `evaluate_many(ordered=True)`, its wall time.

  python bench/throughput.py --device cuda --modes fresh-candidates,grpo-batch --candidates solutions \
      --only level1/ --profile training --concurrency auto --rounds 3 --json fresh.json
  # both profiles on the same (fresh) candidates and cached baselines, speedups compared per problem:
  python bench/throughput.py --device cuda --modes fresh-candidates --candidates solutions --only level1/ \
      --profile default,training --concurrency auto --cache-dir .bench-cache --json profiles.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from batch_stats import HostCpu, UtilizationSampler, batch_stats, gpu_seconds, loop_seconds  # noqa: E402
from candidate_mix import as_completion, fresh, grpo_items, mix, solutions  # noqa: E402

from kernelrl import Evaluator, EvaluatorSettings, VerdictSettings, load_suite
from kernelrl.cache import ResultCache
from kernelrl.results import EvalResult


def run_mode(ev: Evaluator, name: str, items, kinds: list[str]) -> dict:
    # one Evaluator (one judge: references, audits and baselines computed once) for every mode, made with the
    # result cache off; the 'cached' mode gives it an empty cache, fills it with one pass, then times a second
    ev.launcher.settings = dataclasses.replace(ev.launcher.settings, warm_pool=name != "fresh")
    ev._result_cache = None
    if name == "cached":
        ev._result_cache = ResultCache(Path(tempfile.mkdtemp(prefix="kernelrl-bench-")) / ResultCache.FILE)
        for problem, code in items:
            ev.evaluate(problem, code)
    started = time.monotonic()
    if name == "pool-batch":
        results = list(ev.evaluate_many(items, ordered=True))  # zipped with `kinds` below
    else:
        results = [ev.evaluate(problem, code) for problem, code in items]
    total = time.monotonic() - started
    for kind, r in zip(kinds, results, strict=True):
        if r.status.value == "timeout":  # no candidate in the mix hangs: say where it stopped
            print(f"{name}: a {kind} candidate timed out at stage {r.stage.value}: {r.message}; phases "
                  f"{r.phases_s}; log tail {r.log[-300:]!r}", flush=True)
    overheads = [r.wall_time_s - gpu_seconds(r) for r in results]
    outside = [r.wall_time_s - loop_seconds(r) for r in results]
    by_kind: dict[str, list[float]] = {}
    for kind, overhead in zip(kinds, overheads, strict=True):
        by_kind.setdefault(kind, []).append(overhead)
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    paths = sorted({r.environment.isolation[-1] for r in results
                    if r.environment and r.environment.isolation})
    phases: dict[str, list[float]] = {}
    for r in results:
        for phase, seconds in r.phases_s.items():
            phases.setdefault(phase, []).append(seconds)
    return {
        "median_phases_s": {k: round(statistics.median(v), 3) for k, v in phases.items()},
        "cache_hits": sum(r.cached for r in results),
        # run again alone after running out of GPU memory next to others (Evaluator's RunSlots)
        "oom_retries": sum(1 for r in results if "oom_retry" in r.phases_s),
        "mode": name, "evaluations": len(results), "total_s": round(total, 2),
        "evals_per_min": round(60 * len(results) / total, 1),
        "median_overhead_s": round(statistics.median(overheads), 3),
        "median_overhead_by_kind_s": {k: round(statistics.median(v), 3) for k, v in sorted(by_kind.items())},
        "median_outside_timed_loop_s": round(statistics.median(outside), 3),
        "p90_overhead_s": round(sorted(overheads)[int(0.9 * (len(overheads) - 1))], 3),
        "median_wall_s": round(statistics.median(r.wall_time_s for r in results), 3),
        "statuses": statuses, "paths": paths,
    }


def fresh_settings(args, cache_dir: Path) -> dict:
    """The evaluator's settings of a fresh-candidates or grpo-batch row, from the command line."""
    extra = {} if args.standby_sandboxes is None else {"standby_sandboxes": args.standby_sandboxes}
    if args.compile_slots is not None:
        extra["compile_slots"] = args.compile_slots
    if args.sandbox_memory_gb is not None:
        extra["sandbox_memory_gb"] = args.sandbox_memory_gb
    if args.cpu_timing:
        extra["cpu_timing"] = True
    if args.trials is not None:  # else the profile's own (5)
        extra["trials"] = args.trials
    return dict(device=args.device, inductor_baseline=not args.no_inductor, cache_dir=cache_dir,
                result_cache=True,
                max_concurrency=None if args.concurrency == "auto" else int(args.concurrency), **extra)


def warm_problems(ev: Evaluator, args, suite, warm: dict[str, str], mode: str, run: str) -> None:
    """Each problem's judge state, audit and baselines (the GPU fills the baseline cache here), and one
    evaluation of a differently tagged copy, none of it counted."""
    for pid, code in warm.items():
        problem = suite.get(pid)
        ev.audit(problem)
        if ev.environment().mode == "gpu" and ev.verdict.timing:
            ev.time_baselines(problem)
        # one at a time: each problem's GPU memory need learned with the device to itself
        if not args.warm_batch:
            ev.evaluate(problem, fresh(code, f"{run}-warm"))
    # all at once, as a trainer's first step: unseen problems charged their audit's estimate
    if args.warm_batch:
        warmed = list(ev.evaluate_many([(suite.get(pid), fresh(code, f"{run}-warm"))
                                        for pid, code in warm.items()]))
        print(f"{mode}: warm-up batch of {len(warmed)} unseen problems: "
              f"{sum('oom_retry' in r.phases_s for r in warmed)} out-of-memory retries, statuses "
              f"{dict(Counter(r.status.value for r in warmed))}", flush=True)


def evaluate_batch(ev: Evaluator, args, items: list, kinds: list[str], mode: str, profile: str
                   ) -> tuple[list[EvalResult], float, float]:
    """One batch, as a reward function hands it in; progress printed (and streamed to --progress) as results
    finish, so a run stopped early still says how far it got. Returns the results in order, the wall time
    and when it started (Unix seconds)."""
    started_epoch, started = time.time(), time.monotonic()
    by_index: dict[int, EvalResult] = {}
    for index, result in ev.evaluate_indexed(items):
        by_index[index] = result
        if args.progress is not None:
            with args.progress.open("a") as f:
                f.write(json.dumps({"mode": mode, "profile": profile, "index": index,
                                    "kind": kinds[index], "problem": result.problem_id,
                                    "status": result.status.value, "wall_s": result.wall_time_s,
                                    "phases_s": result.phases_s,
                                    "t_s": round(time.monotonic() - started, 3)}) + "\n")
        if len(by_index) % 10 == 0 or len(by_index) == len(items):
            elapsed = time.monotonic() - started
            print(f"{mode}: {len(by_index)}/{len(items)} done in {elapsed:.0f} s "
                  f"({60 * len(by_index) / elapsed:.1f} evals/min so far)", flush=True)
    return [by_index[k] for k in range(len(items))], time.monotonic() - started, started_epoch


def run_fresh(args, chosen: list[tuple[str, str, str]], mode: str, profile: str, cache_dir: Path) -> dict:
    """Fresh candidates (every one unseen) or one GRPO-style reward batch, on a new Evaluator whose caches
    start empty; each problem warmed first (audit, judge state, baselines), as in a training run."""
    suite = load_suite()
    run = uuid.uuid4().hex[:8]
    profiles = (EvaluatorSettings.training(), VerdictSettings.training()) if profile == "training" \
        else (None, None)
    with Evaluator(*profiles, **fresh_settings(args, cache_dir)) as ev:
        print(f"{mode}: profile {profile}, slots: {ev.slots.reason}", flush=True)
        started = time.monotonic()
        ev.warm_up()
        batch = grpo_items(chosen, args.batch) if mode == "grpo-batch" else []
        warm = {pid: code for _, pid, code in chosen}
        warm.update({pid: code for kind, pid, _, code in batch if kind == "wrong" and pid not in warm})
        warm_problems(ev, args, suite, warm, mode, run)
        print(f"{mode}: warm-up ({len(warm)} problems: judge, audits, baselines) "
              f"{time.monotonic() - started:.1f} s", flush=True)
        if ev.gpu_memory() is not None:  # now, so that a run stopped early still says what bounds it
            print(f"{mode}: GPU memory admission after the warm-up: {memory_summary(ev.gpu_memory(), suite)}",
                  flush=True)
        if mode == "grpo-batch":  # completions, as the policy wrote them (the code block is extracted)
            items = [(suite.get(pid), as_completion(fresh(code, f"{run}-{k}")) if code else text)
                     for k, (kind, pid, text, code) in enumerate(batch)]
            kinds = [kind for kind, _, _, _ in batch]
        else:
            items = [(suite.get(pid), fresh(code, f"{run}-{n}-{k}"))
                     for n in range(args.rounds) for k, (_, pid, code) in enumerate(chosen)]
            kinds = [kind for _ in range(args.rounds) for kind, _, _ in chosen]
        gpu_index = int(args.device.split(":")[1]) if args.device.startswith("cuda:") else 0
        sampler = UtilizationSampler(gpu_index) if args.device.startswith("cuda") else None
        if sampler is not None:
            sampler.start()
        host_cpu = HostCpu()
        results, total, started_epoch = evaluate_batch(ev, args, items, kinds, mode, profile)
        utilization = sampler.stop() if sampler is not None else None
        cpu = host_cpu.stop(len(results))
        stats = ev.cache_stats()
        memory = ev.gpu_memory()
    row = {"mode": mode, "profile": profile, "slots": dataclasses.asdict(ev.slots),
           **batch_stats(results, total, started_epoch), "gpu_utilization": utilization, "host_cpu": cpu,
           "result_cache": dataclasses.asdict(stats["results"]) if "results" in stats else None}
    return fresh_row(row, results, kinds, total, started_epoch, memory, suite)


def fresh_row(row: dict, results: list[EvalResult], kinds: list[str], total: float, started_epoch: float,
              memory: dict | None, suite) -> dict:
    """A fresh-candidates or grpo-batch row's figures beyond batch_stats: the slots held at once, the GPU
    memory admission, the statuses by kind of candidate and every result."""
    mode = row["mode"]
    # evaluations holding their slots at once, on average: below the compile slots, something else (the GPU
    # memory admission, the timing slot) is the bound
    row["mean_granted"] = round(sum(r.wall_time_s - r.phases_s.get("queue", 0.0) for r in results) / total, 2)
    if memory is not None:
        row["gpu_memory"] = memory_gib(memory, suite)
    if mode == "grpo-batch":
        row["reward_batch_wall_s"] = round(total, 2)
        by_kind: dict[str, dict[str, int]] = {}
        for kind, r in zip(kinds, results, strict=True):
            by_kind.setdefault(kind, {}).setdefault(r.status.value, 0)
            by_kind[kind][r.status.value] += 1
        row["statuses_by_kind"] = by_kind
    row["results"] = [{"kind": kind, "problem": r.problem_id, "status": r.status.value,
                       "wall_s": r.wall_time_s, "phases_s": r.phases_s, "cached": r.cached,
                       "timeline": {k: round(v - started_epoch, 4) for k, v in r.timeline.items()},
                       "candidate_ms": (r.timing.candidate.median_ms if r.timing and r.timing.candidate
                                        else None),
                       "timed_reps": r.timing.candidate.reps if r.timing and r.timing.candidate else None,
                       "stopped": r.timing.candidate.stopped if r.timing and r.timing.candidate else None,
                       "speedup_vs_eager": r.timing.speedup_vs_eager if r.timing else None,
                       "speedup_rse": r.timing.speedup_rse if r.timing else None,
                       "message": r.message[:200]}
                      for kind, r in zip(kinds, results, strict=True)]
    return row


def compare_profiles(default: dict, training: dict) -> dict:
    """Per problem, the training profile's speedup over eager against the default profile's (medians over the
    rounds): the relative difference, whether it lies within 2x the training profile's speedup RSE (~95%, the
    error within one run), and whether it lies within the larger of that and the spread between rounds of
    either profile ((max - min) / median: what the GPU's clocks and the fresh inputs move between runs)."""
    def by_problem(row: dict, key: str) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        for r in row["results"]:
            if r.get(key) is not None:
                found.setdefault(r["problem"], []).append(r[key])
        return found

    def spread(values: list[float]) -> float:
        return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0

    d_all, t_all = by_problem(default, "speedup_vs_eager"), by_problem(training, "speedup_vs_eager")
    rse = {k: statistics.median(v) for k, v in by_problem(training, "speedup_rse").items()}
    rows = {}
    for pid in sorted(d_all.keys() & t_all.keys()):
        d, t = statistics.median(d_all[pid]), statistics.median(t_all[pid])
        diff, error = t / d - 1, 2 * rse[pid] if pid in rse else None
        rounds = max(spread(d_all[pid]), spread(t_all[pid]))
        rows[pid] = {"default": round(d, 4), "training": round(t, 4), "rel_diff": round(diff, 4),
                     "training_rse": rse.get(pid), "rounds_spread": round(rounds, 4),
                     "within_2rse": error is not None and abs(diff) <= error,
                     "within_2rse_or_rounds": abs(diff) <= max(error or 0.0, rounds)}
    diffs = [abs(v["rel_diff"]) for v in rows.values()]
    return {"problems": len(rows), "within_2rse": sum(v["within_2rse"] for v in rows.values()),
            "within_2rse_or_rounds": sum(v["within_2rse_or_rounds"] for v in rows.values()),
            "median_abs_rel_diff": round(statistics.median(diffs), 4) if diffs else None,
            "max_abs_rel_diff": round(max(diffs), 4) if diffs else None, "per_problem": rows}


def memory_gib(memory: dict, suite) -> dict:
    """`Evaluator.gpu_memory()` in GiB, the learned charges by problem id, largest first."""
    ids = {p.sha256: p.id for p in suite}
    gib = 1 << 30
    return {"budget_gib": round(memory["budget_bytes"] / gib, 2),
            "default_gib": round(memory["default_bytes"] / gib, 2),
            "need_gib": {ids.get(k, k): round(v / gib, 2)
                         for k, v in sorted(memory["need_bytes"].items(), key=lambda kv: -kv[1])}}


def memory_summary(memory: dict, suite) -> str:
    found = memory_gib(memory, suite)
    needs = list(found["need_gib"].values())
    return (f"budget {found['budget_gib']} GiB, default charge {found['default_gib']} GiB; learned charges "
            f"(GiB) median {statistics.median(needs) if needs else None}, largest "
            f"{list(found['need_gib'].items())[:5]}")


def print_fresh(row: dict) -> None:
    print(f"{row['mode']:>16}: {row['evals_per_min']:6.1f} evals/min  {row['evaluations']} "
          f"evaluations in {row['total_s']} s  median wall {row['median_wall_s']} s  p90 "
          f"{row['p90_wall_s']} s  {row['statuses']}  result-cache hits {row['cache_hits']}  "
          f"out-of-memory retries {row['oom_retries']}", flush=True)
    print(f"{'':>16}  median phases (s): {row['median_phases_s']}", flush=True)
    print(f"{'':>16}  share of sandbox time: {row['phase_share']}", flush=True)
    print(f"{'':>16}  timing slot busy {row['timing_slot_busy_share']:.0%} of the wall time; GPU idle "
          f"(timelines: no evaluation in a device phase) {row['gpu_idle_s_timeline']} s; utilization samples "
          f"{row['gpu_utilization']}; median timed reps {row['median_timed_reps']}, median speedup RSE "
          f"{row['median_speedup_rse']}; host CPU {row.get('host_cpu')}", flush=True)
    print(f"{'':>16}  evaluations holding their slots at once (mean): {row['mean_granted']} of "
          f"{row['slots']['compile_slots']} compile slots", flush=True)
    if row.get("gpu_memory"):
        memory = row["gpu_memory"]
        needs = list(memory["need_gib"].values())
        print(f"{'':>16}  GPU memory admission: budget {memory['budget_gib']} GiB; learned charges (GiB) "
              f"median {statistics.median(needs) if needs else None}, largest "
              f"{list(memory['need_gib'].items())[:5]}", flush=True)
    if "statuses_by_kind" in row:
        print(f"{'':>16}  reward batch wall time {row['reward_batch_wall_s']} s; by kind "
              f"{row['statuses_by_kind']}", flush=True)


def write_rows(path: Path | None, device: str, rows: list[dict]) -> None:
    """The rows so far, after each mode: a run cut in a later mode (by a time
    limit) keeps the earlier ones. Written to a temporary file and renamed
    over the last, so a kill mid-write leaves the previous rows whole."""
    if path is None:
        return
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps({"device": device, "rows": rows}, indent=2))
    os.replace(partial, path)


def parser_of() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--rounds", type=int, default=1, help="times the mix is evaluated per mode")
    parser.add_argument("--trials", type=int,
                        help="correctness trials (default: 2 in the mix modes, the profile's 5 in "
                             "fresh-candidates and grpo-batch)")
    parser.add_argument("--concurrency", default="4",
                        help="evaluations in flight in the batch modes; 'auto' (fresh-candidates, "
                             "grpo-batch): twice the compile slots, within the memory bound")
    parser.add_argument("--modes", default="fresh,pool,pool-batch,cached",
                        help="fresh (no warm pool), pool, pool-batch, cached, fresh-candidates, grpo-batch")
    parser.add_argument("--candidates", choices=["mix", "solutions"], default="mix",
                        help="fresh-candidates/grpo-batch: the fixed mix, or the "
                             "built-in reference solutions")
    parser.add_argument("--only", default="level1/", help="--candidates solutions: problem id prefix")
    parser.add_argument("--profile", default="default",
                        help="fresh-candidates/grpo-batch: default (the default settings), training (the "
                             ".training() profiles), or both, comma-separated: each mode runs per profile, "
                             "and fresh-candidates' speedups are compared per problem")
    parser.add_argument("--cache-dir", type=Path,
                        help="fresh-candidates/grpo-batch: the evaluators' cache directory "
                             "(baselines stay there between runs; every candidate is still new); "
                             "default: a new temporary one")
    parser.add_argument("--compile-slots", type=int,
                        help="EvaluatorSettings.compile_slots (default: the host's cores)")
    parser.add_argument("--sandbox-memory-gb", type=float,
                        help="EvaluatorSettings.sandbox_memory_gb (default 2)")
    parser.add_argument("--batch", type=int, default=64, help="grpo-batch: completions in the reward batch")
    parser.add_argument("--warm-batch", action="store_true",
                        help="fresh-candidates/grpo-batch: evaluate the warm-up candidates as one batch (a "
                             "first training step's first wave: unseen problems charged their audit's "
                             "estimate) instead of one at a time, and print its out-of-memory retries")
    parser.add_argument("--progress", type=Path, default=None,
                        help="fresh-candidates/grpo-batch: append one JSON line per finished evaluation here")
    parser.add_argument("--cpu-timing", action="store_true",
                        help="fresh-candidates/grpo-batch on the CPU: time with the host "
                             "clock (VerdictSettings.cpu_timing) so the timing token, its "
                             "queue and adaptive stopping run")
    parser.add_argument("--standby-sandboxes", type=int,
                        help="EvaluatorSettings.standby_sandboxes (default: its default)")
    parser.add_argument("--no-inductor", action="store_true", help="skip the torch.compile baseline (GPU)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = parser_of()
    args = parser.parse_args(argv)
    names = args.modes.split(",")
    rows: list[dict] = []
    fresh_modes = [m for m in names if m in ("fresh-candidates", "grpo-batch")]
    names = [m for m in names if m not in fresh_modes]
    if fresh_modes:
        profiles = args.profile.split(",")
        if not set(profiles) <= {"default", "training"}:
            parser.error("--profile: default, training or default,training")
        run_fresh_modes(args, fresh_modes, profiles, rows)
    if names:
        run_mix_modes(args, names, rows)
    return 0


def run_fresh_modes(args, fresh_modes: list[str], profiles: list[str], rows: list[dict]) -> None:
    """The fresh-candidates and grpo-batch rows, per profile; with both profiles, their speedups compared."""
    chosen = mix() if args.candidates == "mix" else solutions(args.only)
    chosen_grpo = [x for x in chosen if x[0] == "correct"]
    cache_dir = args.cache_dir or Path(tempfile.mkdtemp(prefix="kernelrl-fresh-"))
    cache_dir.mkdir(parents=True, exist_ok=True)
    by_profile = {}
    for profile in profiles:
        for name in fresh_modes:
            row = run_fresh(args, chosen_grpo if name == "grpo-batch" else chosen, name, profile,
                            cache_dir)
            rows.append(row)
            write_rows(args.json, args.device, rows)
            print_fresh(row)
            if name == "fresh-candidates":
                by_profile[profile] = row
    if len(by_profile) == 2:
        comparison = compare_profiles(by_profile["default"], by_profile["training"])
        rows.append({"mode": "profile-comparison", **comparison})
        write_rows(args.json, args.device, rows)
        print("training vs default speedups over eager: "
              f"{comparison['within_2rse']}/{comparison['problems']} problems within 2x the training "
              f"profile's speedup RSE, {comparison['within_2rse_or_rounds']} within that or the spread "
              f"between rounds; median |difference| {comparison['median_abs_rel_diff']}, max "
              f"{comparison['max_abs_rel_diff']}", flush=True)
    if args.cache_dir is None:
        shutil.rmtree(cache_dir, ignore_errors=True)


def run_mix_modes(args, names: list[str], rows: list[dict]) -> None:
    """The fixed mix's modes (fresh, pool, pool-batch, cached) on one evaluator, each row written when
    done."""
    mix_trials = args.trials if args.trials is not None else 2
    suite = load_suite()
    chosen = mix()
    items = [(suite.get(pid), code) for _, pid, code in chosen] * args.rounds
    item_kinds = [kind for kind, _, _ in chosen] * args.rounds
    # every candidate once: the acceptance target is per evaluation with a warm compile cache
    warm_items = [(suite.get(pid), code) for _, pid, code in chosen]
    kinds = sorted({k for k, _, _ in chosen})
    print(f"device {args.device}: {len(items)} evaluations per mode ({', '.join(kinds)}), trials "
          f"{mix_trials}, batch concurrency {args.concurrency}", flush=True)
    extra = {} if args.standby_sandboxes is None else {"standby_sandboxes": args.standby_sandboxes}
    ev = Evaluator(device=args.device, trials=mix_trials, max_concurrency=int(args.concurrency),
                   inductor_baseline=not args.no_inductor, result_cache=False, **extra)
    started = time.monotonic()
    ev.warm_up()
    for problem, code in warm_items:
        ev.evaluate(problem, code)
    print(f"warm-up (judge, zygote, references, baselines): {time.monotonic() - started:.1f} s", flush=True)
    for name in names:
        row = run_mode(ev, name, items, item_kinds)
        rows.append(row)
        write_rows(args.json, args.device, rows)
        print(f"{row['mode']:>11}: {row['evals_per_min']:6.1f} evals/min  median overhead "
              f"{row['median_overhead_s']:.3f} s  p90 {row['p90_overhead_s']:.3f} s  median "
              f"wall {row['median_wall_s']:.3f} s  total {row['total_s']} s  "
              f"{row['statuses']}  path {row['paths']}  cache hits {row['cache_hits']}  "
              f"out-of-memory retries {row['oom_retries']}", flush=True)
        print(f"{'':>11}  median phases (s): {row['median_phases_s']}", flush=True)
        print(f"{'':>11}  median overhead by kind (s): {row['median_overhead_by_kind_s']}; outside the timed "
              f"loop {row['median_outside_timed_loop_s']:.3f} s", flush=True)
    ev.close()


if __name__ == "__main__":
    sys.exit(main())
