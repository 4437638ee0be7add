"""The agent: per problem, K refinement turns x N parallel samples, scored by a reward preset.

Refine mode: sample s starts from the first-turn prompt; at each later turn it is asked to improve its own
last kernel given the evaluator's feedback. A chain stops once it is correct and no speedup was measured (CPU
interpreter: nothing left to improve measurably); with timings, correct chains keep optimizing.

Evolve mode: a population of this problem's evaluated kernels (best `population` by reward, distinct code);
each turn selects N parents by reward with diversity (softmax over rewards, sampling without replacement among
distinct kernels) and prompts with the parent, its feedback, and the best prior kernels of this and similar
problems from the kernel database (filled by every run).

Both modes stop a problem early once a correct kernel reaches `target_speedup` over eager. Every attempt is a
`Step` recorded in the run store (if given) as it is evaluated; a resumed run reuses recorded steps instead of
generating them again.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kernelrl.candidates import Candidate
from kernelrl.evaluate import Scorer
from kernelrl.policies.base import Completion, Policy
from kernelrl.problems import Problem
from kernelrl.prompts import Prompts
from kernelrl.results import EvalResult, Status
from kernelrl.rewards import get_reward, reward_minimum
from kernelrl.rewards.judge import LLMJudge, judged_reward, verify_with_judge
from kernelrl.runs import KernelDB, RunStore, Step

MODES = ("refine", "evolve")


@dataclass(frozen=True)
class AgentConfig:
    turns: int = field(default=3, metadata={"help": "Refinement turns per sample (K)."})
    samples: int = field(default=4, metadata={"help": "Parallel samples per problem (N)."})
    mode: str = field(default="refine", metadata={
        "help": "refine (each sample improves its own kernel) or evolve (population + kernel database)."})
    temperature: float = field(default=0.7, metadata={"help": "Sampling temperature."})
    max_tokens: int = field(default=4096, metadata={"help": "Completion token limit per sample."})
    reward: str = field(default="tiered", metadata={
        "help": "Reward preset (kernelrl.rewards) or module:function, its parameters in reward_params."})
    reward_params: dict[str, Any] = field(default_factory=dict)
    target_speedup: float | None = field(default=None, metadata={
        "help": "Stop a problem once a correct kernel is this much faster than eager (default: never)."})
    population: int = 8  # evolve: kernels kept per problem
    inspirations: int = 2  # evolve: prior kernels from the kernel database shown per prompt
    selection_temperature: float = 1.0  # evolve: softmax temperature over rewards
    seed: int = 0

    def __post_init__(self) -> None:
        if self.turns < 1 or self.samples < 1:
            raise ValueError("turns and samples must be at least 1")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.max_tokens < 1 or self.temperature < 0:
            raise ValueError("max_tokens must be >= 1 and temperature >= 0")
        if self.population < 1 or self.inspirations < 0 or self.selection_temperature <= 0:
            raise ValueError("population >= 1, inspirations >= 0 and selection_temperature > 0 are required")
        get_reward(self.reward, **self.reward_params)  # validates name and parameters


@dataclass
class ProblemOutcome:
    problem_id: str
    steps: list[Step]
    best: Step | None  # the best correct step by reward (ties: higher speedup, then earlier)
    stopped_early: bool = False

    @property
    def solved(self) -> bool:
        return self.best is not None


def best_step(steps: list[Step]) -> Step | None:
    correct = [s for s in steps if s.result.correct]
    if not correct:
        return None
    return max(correct, key=lambda s: (s.reward, s.speedup_vs_eager or 0.0, -s.turn, -s.sample))


def _parent_tag(parent: Step | None) -> str | None:
    return None if parent is None else f"{parent.sample}/{parent.turn}"


def _code_sha(code: str | None) -> str:
    return hashlib.sha256((code or "").encode()).hexdigest()


class Agent:
    """Runs the refinement loop for problems with one policy and one evaluator."""

    def __init__(self, policy: Policy, evaluator: Scorer, config: AgentConfig | None = None,
                 prompts: Prompts | None = None, store: RunStore | None = None,
                 kernel_db: KernelDB | None = None, on_step: Callable[[Step], None] | None = None,
                 judge: LLMJudge | None = None, judge_lambda: float = 0.0, judge_verify: str = "off") -> None:
        """`judge` (optional): with `judge_lambda` > 0 the reward is r + lambda*J (see rewards.judge);
        `judge_verify` 'warn' records the judge's hack finding on correct kernels, 'enforce' also turns the
        verdict into hack_detected, 'off' does neither."""
        if judge_verify not in ("off", "warn", "enforce"):
            raise ValueError(f"judge_verify must be off, warn or enforce, not {judge_verify!r}")
        if (judge_lambda or judge_verify != "off") and judge is None:
            raise ValueError("judge_lambda and judge_verify need a judge")
        self.judge, self.judge_verify = judge, judge_verify
        self.policy = policy
        self.evaluator = evaluator
        self.config = config or AgentConfig()
        self.prompts = prompts or Prompts()
        self.store = store
        self.kernel_db = kernel_db
        self.on_step = on_step
        self._reward = get_reward(self.config.reward, **self.config.reward_params)
        self._reward_min = reward_minimum(self.config.reward, **self.config.reward_params)
        self._judged = (judged_reward(self._reward, judge, judge_lambda, self._reward_min)
                        if judge is not None and judge_lambda else None)

    # -- one attempt -----------------------------------------------------------------------------------------
    def reward(self, result: EvalResult) -> float:
        return self._reward_min if result.status is Status.HACK_DETECTED else self._reward(result)

    def _evaluate(self, problem: Problem, sample: int, turn: int, messages: list[dict[str, str]],
                  completion: Completion, parent: str | None, result: EvalResult | None = None) -> Step:
        """One attempt as a recorded step; `result` when the sandbox already evaluated it (a batch)."""
        candidate = Candidate.from_text(completion.text, "completion")
        code = candidate.code
        if result is None:
            result = self.evaluator.evaluate_one(problem, candidate)
        if self.judge is not None and self.judge_verify != "off" and code is not None:
            result = verify_with_judge(result, problem, code, self.judge,
                                       enforce=self.judge_verify == "enforce")
        if self._judged is not None:
            reward = self._judged(result, problem, code)
        else:
            reward = self.reward(result)
        step = Step(problem_id=problem.id, sample=sample, turn=turn, messages=messages, completion=completion,
                    code=code, result=result, reward=reward, level=problem.level,
                    family=problem.family, parent=parent)
        if self.store is not None:
            self.store.record(step)
        if self.kernel_db is not None and code is not None:
            source = str(self.store.run_dir) if self.store is not None else ""
            self.kernel_db.add(problem, code, result, step.reward, source=source)
        if self.on_step is not None:
            self.on_step(step)
        return step

    def _target_reached(self, step: Step) -> bool:
        target = self.config.target_speedup
        return target is not None and step.result.correct and (step.speedup_vs_eager or 0.0) >= target

    def _generate(self, requests: list[tuple[list[dict[str, str]], int, list[int]]], problem: Problem,
                  turn: int) -> list[list[Completion]]:
        """requests: (messages, n, sample indices). Concurrent up to the policy's limit."""
        cfg = self.config

        def one(req: tuple[list[dict[str, str]], int, list[int]]) -> list[Completion]:
            messages, n, samples = req
            out = self.policy.generate(messages, n=n, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                                       tags={"problem_id": problem.id, "turn": turn, "samples": samples})
            if len(out) != n:
                raise RuntimeError(f"policy {self.policy.name} returned {len(out)} completions, expected {n}")
            return out

        workers = max(1, min(len(requests), int(getattr(self.policy, "max_concurrency", 1))))
        if workers == 1:
            return [one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, requests))

    # -- a problem -------------------------------------------------------------------------------------------
    def solve(self, problem: Problem) -> ProblemOutcome:
        done = self.store.done(problem.id) if self.store is not None else {}
        state = self.store.problem_state(problem.id) if self.store is not None else None
        steps: list[Step] = []
        stopped = False
        for turn in range(1, self.config.turns + 1):
            if state is not None and state.get("finished_at_turn", 1 << 30) < turn:
                break
            new, stopped = self._turn(problem, turn, steps, done)
            steps.extend(new)
            if stopped or not new:
                break
        if self.store is not None and stopped:
            self.store.mark_problem(problem.id,
                                    {"finished_at_turn": max(s.turn for s in steps), "stopped_early": True})
        return ProblemOutcome(problem.id, steps, best_step(steps), stopped)

    def _turn(self, problem: Problem, turn: int, history: list[Step],
              done: dict[tuple[int, int], Step]) -> tuple[list[Step], bool]:
        plan = self._plan(problem, turn, history)  # sample -> (messages, parent step or None)
        new: list[Step] = []
        todo: dict[int, tuple[list[dict[str, str]], Step | None]] = {}
        for sample, (messages, parent) in plan.items():
            if (sample, turn) in done:  # resumed: reuse the recorded attempt
                new.append(done[(sample, turn)])
                if self._target_reached(done[(sample, turn)]):
                    return new, True
            else:
                todo[sample] = (messages, parent)
        if not todo:
            return new, False
        # samples sharing the same messages go in one request with n > 1
        groups: dict[str, list[int]] = {}
        for sample, (messages, _) in todo.items():
            groups.setdefault(repr(messages), []).append(sample)
        requests = [(todo[samples[0]][0], len(samples), samples) for samples in groups.values()]
        completions = self._generate(requests, problem, turn)
        attempts = [(sample, messages, completion, todo[sample][1])
                    for (messages, _, samples), outs in zip(requests, completions, strict=True)
                    for sample, completion in zip(samples, outs, strict=True)]
        if self.config.target_speedup is None and len(attempts) > 1:
            # nothing stops the turn early: its samples go to the sandboxes at once
            return new + self._evaluate_batch(problem, turn, attempts), False
        for sample, messages, completion, parent in attempts:
            step = self._evaluate(problem, sample, turn, messages, completion, _parent_tag(parent))
            new.append(step)
            if self._target_reached(step):
                return new, True
        return new, False

    def _evaluate_batch(self, problem: Problem, turn: int, attempts: list) -> list[Step]:
        """Attempts evaluated concurrently (`Scorer.evaluate_many`), each recorded as soon as its verdict
        arrives (a crash loses only the attempts still running); returned in sample order."""
        steps: dict[int, Step] = {}
        items = [(problem, completion.text) for _, _, completion, _ in attempts]
        for k, result in self.evaluator.evaluate_indexed(items, kind="completion"):
            sample, messages, completion, parent = attempts[k]
            steps[k] = self._evaluate(problem, sample, turn, messages, completion, _parent_tag(parent),
                                      result)
        return [steps[i] for i in range(len(attempts))]

    def _inspirations(self, problem: Problem, exclude: set[str]) -> list:
        if self.kernel_db is None or self.config.inspirations == 0:
            return []
        return self.kernel_db.best(problem, self.config.inspirations, exclude=exclude)

    def _plan(self, problem: Problem, turn: int,
              history: list[Step]) -> dict[int, tuple[list[dict[str, str]], Step | None]]:
        samples = range(self.config.samples)
        if turn == 1:
            messages = self.prompts.initial(problem)
            if self.config.mode == "evolve":
                inspirations = self._inspirations(problem, set())
                if inspirations:
                    block = self.prompts.render("inspiration.md", kernels="\n".join(
                        f"\n### {i.problem_id} (reward {i.reward:.3g})\n\n```python\n{i.code.strip()}\n```"
                        for i in inspirations))
                    messages = [messages[0],
                                {"role": "user", "content": messages[1]["content"] + "\n" + block}]
            return {s: (messages, None) for s in samples}
        if self.config.mode == "refine":
            plan = {}
            for s in samples:
                chain = [st for st in history if st.sample == s]
                if not chain:
                    continue
                last = max(chain, key=lambda st: st.turn)
                if last.result.correct and last.speedup_vs_eager is None:
                    continue  # correct and nothing measurable left to improve
                plan[s] = (self.prompts.refine(problem, last.code, last.result, turn), last)
            return plan
        parents = self._select_parents(problem, turn, history)
        plan = {}
        for s, parent in zip(samples, parents, strict=False):
            inspirations = self._inspirations(problem, {_code_sha(parent.code)})
            plan[s] = (self.prompts.refine(problem, parent.code, parent.result, turn, inspirations), parent)
        return plan

    def _select_parents(self, problem: Problem, turn: int, history: list[Step]) -> list[Step]:
        """Evolve: N parents from the population, by reward with diversity (distinct code first)."""
        by_code: dict[str, Step] = {}
        for st in sorted(history, key=lambda st: (-st.reward, st.turn, st.sample)):
            by_code.setdefault(_code_sha(st.code), st)
        population = list(by_code.values())[: self.config.population]
        if not population:
            return []
        rng = random.Random(f"{self.config.seed}/{problem.id}/{turn}")
        chosen: list[Step] = []
        while len(chosen) < self.config.samples:
            pool = [p for p in population if p not in chosen] or population  # distinct first, then repeats
            top = max(p.reward for p in pool)
            weights = [math.exp((p.reward - top) / self.config.selection_temperature) for p in pool]
            chosen.append(rng.choices(pool, weights=weights, k=1)[0])
        return chosen
