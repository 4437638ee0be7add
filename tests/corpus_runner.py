"""Verdicts on corpus files from whatever kernelrl PYTHONPATH points at (tests/corpus/test_mutants.py points
it at a mutated copy). Prints one JSON line naming the kernelrl it imported, then one per case:
{"name", "status", "message", "rules"} (rules: the static rules that reject it).

    python tests/corpus_runner.py exploits/x01_decoy_kernel.py
    exploits_values/v02_gelu_sigmoid_approximation.py python tests/corpus_runner.py --device cuda
    exploits_runtime/g05_graph_replay_matmul.py   # a GPU machine

Static-layer classes are only analyzed (no sandbox); the others are evaluated in CPU mode, with the static
rules first where their class keeps them on (kernelrl.candidates.rules, the evaluator's own first step). With
`--device cuda` each case is evaluated on the GPU as the GPU corpus test does (static rules off, the op
census's checks off but the case's own)."""

from __future__ import annotations

import dataclasses
import json
import sys

import corpus


def main(args: list[str]) -> None:
    device, names = (args[1], args[2:]) if args[:1] == ["--device"] else ("cpu", args)
    import kernelrl
    from kernelrl.candidates.rules import analyze_rules

    print(json.dumps({"kernelrl": kernelrl.__file__}), flush=True)
    cases = [corpus.case(name) for name in names]
    verdicts: dict[str, dict] = {}
    to_run = []
    for c in cases:
        rules = sorted({f.rule for f in analyze_rules(c.source()) if f.policy == "reject"})
        if c.cls.layer == "static" or (c.cls.static_checks and rules):
            verdicts[c.name] = {"status": "hack_detected" if rules else "correct",
                                "message": f"static check {rules[0]}" if rules else "", "rules": rules}
        else:
            to_run.append(c)
    if to_run and device != "cpu":
        verdicts.update(_on_gpu(to_run, device))
    elif to_run:
        from kernelrl import Evaluator, VerdictSettings, load_suite

        suite = load_suite()
        # a case that never returns ends in the run timeout under a mutant that misses it: a minute, not two
        verdict = VerdictSettings(trials=2, static_checks=False, run_timeout_s=60.0)
        # `timing: cpu` files: timed on the host clock (corpus.timed_config); `policy:` files run with their
        # check at that policy (a check that only warns by default). One evaluator for every group: a group's
        # verdict settings are its call's, and the cases of a group are evaluated concurrently
        kinds = sorted({(c.header.get("timing") == "cpu", c.header.get("policy", "")) for c in to_run})
        with Evaluator(device="cpu", standby_sandboxes=1, result_cache=False) as ev:
            for timed, policy in kinds:
                group = [c for c in to_run
                         if (c.header.get("timing") == "cpu", c.header.get("policy", "")) == (timed, policy)]
                chosen = (dataclasses.replace(verdict, runtime_policy={group[0].expect: policy}) if policy
                          else verdict)
                items = [(suite.get(c.problem), c.source()) for c in group]
                for done in ev.evaluate_indexed(items, kind="code",
                                                verdict=corpus.timed_config(chosen) if timed else chosen):
                    verdicts[group[done.index].name] = {"status": done.result.status.value,
                                                        "message": done.result.message, "rules": []}
    for c in cases:
        print(json.dumps({"name": c.name, **verdicts[c.name]}), flush=True)


def _on_gpu(cases: list, device: str) -> dict[str, dict]:
    from kernelrl import Evaluator, VerdictSettings, load_suite

    suite, verdicts = load_suite(), {}
    with Evaluator(device=device, result_cache=False) as ev:
        for c in cases:
            verdict = VerdictSettings(static_checks=False, runtime_policy=corpus.gpu_runtime_policy(c.expect),
                                      run_timeout_s=60.0)
            result = ev.evaluate(suite.get(c.problem), c.source(), verdict=verdict)
            verdicts[c.name] = {"status": result.status.value, "message": result.message, "rules": []}
    return verdicts


if __name__ == "__main__":
    main(sys.argv[1:])
