"""`kernelrl serve`: the reward service (FastAPI + uvicorn, the `serve` extra) over this host's evaluators or
a Ray pool, for trainers in other processes and on other hosts (docs/serving.md)."""

from __future__ import annotations

import ipaddress
import secrets
from pathlib import Path
from typing import Annotated

import typer

from kernelrl import load_suite
from kernelrl.cli.app import EXIT_BAD_INPUT, app, bad_input, fail, stderr
from kernelrl.cli.options import Evaluation, Options, eval_options, with_options

DEFAULT_JOURNAL = Path("~/.cache/kernelrl/serve/journal.sqlite")


def _service_options() -> Options:
    from kernelrl.serve.service import ServiceSettings

    return Options(ServiceSettings, ("max_batch", "max_queued_items", "max_deadline_s", "default_deadline_s",
                                     "hold_s", "default_reward", "neutral_score", "drain_s"))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token(token_file: Path | None, host: str) -> str | None:
    if token_file is None:
        if not _loopback(host):
            fail(f"--host {host} is reachable from other machines: give --token-file FILE (clients send its "
                 "content as a bearer token); `kernelrl serve --new-token FILE` writes a fresh one",
                 EXIT_BAD_INPUT)
        return None
    with bad_input():
        token = token_file.expanduser().read_text().strip()
    if len(token) < 16:
        fail(f"the token in {token_file} is shorter than 16 characters: write a long "
             "random one (--new-token)", EXIT_BAD_INPUT)
    return token


def _named_rewards(specs: list[str]) -> dict[str, str]:
    rewards = {}
    for spec in specs:
        name, eq, value = spec.partition("=")
        if not eq or not name.strip() or not value.strip():
            fail(f"--reward {spec!r}: give NAME=SPEC, e.g. fast=composite:alpha=0.2 "
                 "or mine=my_pkg.rewards:fn", EXIT_BAD_INPUT)
        rewards[name.strip()] = value.strip()
    return rewards


@app.command("serve")
@with_options(evaluation=eval_options("device", "max_concurrency", "trials", "timing", "result_cache",
                                      "cache_dir"),
              service=_service_options())
def serve_cmd(
    host: Annotated[str, typer.Option(
        help="Address to bind; anything but loopback needs --token-file.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8777,
    suite: Annotated[list[str] | None, typer.Option(
        help="Suites whose problems requests may name (repeat; default builtin).")] = None,
    token_file: Annotated[Path | None, typer.Option(help="File holding the bearer "
                                                         "token clients must send.")] = None,
    new_token: Annotated[Path | None, typer.Option(
        help="Write a fresh random token to this file (mode 600) and exit.")] = None,
    journal: Annotated[Path, typer.Option(help="The service journal (SQLite): every answer, kept across "
                                               "restarts.")] = DEFAULT_JOURNAL,
    retention_hours: Annotated[float, typer.Option(help="How long answers and "
                                                        "idempotency keys are kept.")] = 168.0,
    reward: Annotated[list[str] | None, typer.Option(
        help="Allow-list a reward as NAME=SPEC (repeat); requests then name it. "
             "SPEC may be module:NAME.")] = None,
    allow_verdict: Annotated[str | None, typer.Option(
        help="Comma-separated verdict settings requests may change (default: trials, timing, "
             "tolerances, policies, timer and the rest of "
             "kernelrl.serve.schema.REQUEST_VERDICT_FIELDS); 'none' for none.")] = None,
    training_profile: Annotated[bool, typer.Option(
        "--training-profile",
        help="Default verdict settings: the training profile (baselines from the cache, adaptive timing).",
    )] = False,
    all_gpus: Annotated[bool, typer.Option(
        "--all-gpus",
        help="One evaluator per visible GPU (the CPU without one) instead of --device's one.",
    )] = False,
    ray: Annotated[str | None, typer.Option(
        help="Front a Ray pool instead of local evaluators: 'auto' (the cluster this host belongs to) or "
             "ray://HOST:PORT.")] = None,
    ray_cpu_actors: Annotated[int | None, typer.Option(
        help="With --ray: this many CPU evaluators in the pool (the Triton interpreter; a cluster without "
             "GPUs needs them).")] = None,
    trust_sources: Annotated[bool, typer.Option(
        "--trust-sources", help="Take problems by source from requests: the judge runs a problem's reference "
                                "outside the sandbox, so only for clients you trust.")] = False,
    openenv: Annotated[bool, typer.Option(
        "--openenv",
        help="Also serve kernelrl as an OpenEnv environment under /openenv (needs the openenv package).",
    )] = False,
    *, evaluation: Evaluation, service,
) -> None:
    """Serve rewards over HTTP: /v1/evaluate, /v1/reward, OpenRLHF's and slime's routes, /metrics."""
    import dataclasses

    if new_token is not None:
        path = new_token.expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(32) + "\n")
        path.chmod(0o600)
        typer.echo(f"wrote a new token to {path}")
        return
    if ray_cpu_actors is not None and not ray:
        fail("--ray-cpu-actors needs --ray", EXIT_BAD_INPUT)
    try:
        import uvicorn

        from kernelrl.serve.app import create_app
        from kernelrl.serve.journal import Journal
        from kernelrl.serve.schema import REQUEST_VERDICT_FIELDS
        from kernelrl.serve.service import RewardService
    except ImportError as exc:
        fail(f"kernelrl serve needs the serve extra (pip install 'kernelrl[serve]'): {exc}", EXIT_BAD_INPUT)
    mount = None
    if openenv:
        try:
            from kernelrl.serve.openenv_env import mount_openenv as mount
        except ImportError as exc:
            fail(f"--openenv needs the openenv package (pip install 'kernelrl[openenv]'): {exc}",
                 EXIT_BAD_INPUT)
    token = _token(token_file, host)
    allowed = REQUEST_VERDICT_FIELDS if allow_verdict is None else frozenset(
        f.strip() for f in allow_verdict.split(",") if f.strip() and f.strip() != "none")
    unknown = allowed - REQUEST_VERDICT_FIELDS
    if unknown:
        fail(f"--allow-verdict: {sorted(unknown)} may not come from requests (allowed at most: "
             f"{sorted(REQUEST_VERDICT_FIELDS)})", EXIT_BAD_INPUT)
    with bad_input():
        settings = dataclasses.replace(service, allowed_verdict_fields=allowed,
                                       trust_problem_sources=trust_sources,
                                       rewards=_named_rewards(reward or []))
        problems = {}
        for location in suite or ["builtin"]:
            for problem in load_suite(location):
                if problem.id in problems and problems[problem.id].sha256 != problem.sha256:
                    raise ValueError(f"problem id {problem.id!r} is in two suites with different sources")
                problems[problem.id] = problem
        from kernelrl.rewards import parse_reward_spec

        for spec in [settings.default_reward, *settings.rewards.values()]:
            parse_reward_spec(spec)
        store = Journal(journal.expanduser(), retention_s=retention_hours * 3600)
    verdict = evaluation.verdict
    if training_profile:
        verdict = dataclasses.replace(type(verdict).training(), trials=verdict.trials, timing=verdict.timing)
    from kernelrl.serve import open_scorer

    device = evaluation.settings.device
    target = ("ray" if ray == "auto" else ray) if ray else ("all" if all_gpus else None)
    with bad_input():
        pool = {"cpu_actors": ray_cpu_actors} if ray and ray_cpu_actors is not None else {}
        scorer = open_scorer(target, settings=evaluation.settings, verdict=verdict, **pool)
    svc = RewardService(scorer, problems, settings, store, device=device if not ray else f"ray:{ray}")
    err = stderr()
    err.print(f"kernelrl serve: {len(problems)} problems, device {device if not ray else 'ray ' + ray}, "
              f"journal {journal}, http://{host}:{port} "
              f"({'token required' if token else 'no token: loopback only'})")
    try:
        uvicorn.run(create_app(svc, token=token, extra_routes=mount), host=host, port=port,
                    log_level="warning", timeout_graceful_shutdown=int(settings.drain_s))
    finally:
        svc.close()
        scorer.close()
