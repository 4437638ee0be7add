"""Held-out evaluation of the model being trained: the test split through the bench code
(single attempt, greedy; and `samples` sampled attempts for pass@k), with `kernelrl bench`'s
metrics (compile / correct / pass@k / fast_p vs eager and Inductor). Completions are
generated in large batches (one `generate` call serves many problems; the agent would ask one
problem at a time), written as a replay file, and the bench replays them into a run directory
under RUN_DIR/heldout/ — so the verdicts, metrics and report are exactly the bench's."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelrl.agent.bench import run_bench
from kernelrl.agent.loop import AgentConfig
from kernelrl.evaluate import Scorer
from kernelrl.policies import ReplayPolicy, write_replay
from kernelrl.problems import Problem
from kernelrl.prompts import Prompts
from kernelrl.report.training import heldout_dir_name
from kernelrl.train.merged import merged_for_generation
from kernelrl.train.rundir import append_metrics, read_metrics

SAMPLING_TEMPERATURE = 0.8  # pass@k samples; greedy decoding gives the single-attempt numbers
def generation_chunks(conversations: int, n: int, batch: int) -> list[range]:
    """Conversations per generate call: as many as keep n completions each within `batch` sequences (at least
    one conversation a call)."""
    per_call = max(1, batch // n)
    return [range(start, min(start + per_call, conversations)) for start in range(0, conversations, per_call)]


def generated_so_far(done_file: Path | None, texts: Sequence[str]) -> dict[int, list[dict[str, Any]]]:
    """The groups a stopped generation already wrote to `done_file`, by conversation index; a line counts only
    for the same prompt text (a changed problem list starts over)."""
    if done_file is None or not done_file.is_file():
        return {}
    done = {}
    for line in done_file.read_text().splitlines():
        try:
            row = json.loads(line)
            index, group = int(row["index"]), list(row["group"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut by the stop
        if 0 <= index < len(texts) and row.get("prompt_sha") == prompt_sha(texts[index]):
            done[index] = group
    return done


def prompt_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def generate_batched(model: Any, tokenizer: Any, conversations: Sequence[list[dict[str, str]]], n: int,
                     temperature: float, max_tokens: int, batch: int,
                     done_file: Path | None = None, static_cache: bool = False) -> list[list[dict[str, Any]]]:
    """n completions for each conversation: [{"text", "tokens_in", "tokens_out", "finish_reason"}] per one;
    at most `batch` sequences a generate call. With `done_file`, each generate call's groups are appended to
    it as they finish and the groups already there are not generated again (a run stopped by a time limit
    loses at most one call's work). `static_cache`: a static KV cache, for which transformers compiles the
    decode step on a GPU; every call is padded to the longest prompt and the last call filled up to the
    others' size, so the calls share one compiled shape."""
    import torch

    texts = [tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
             for c in conversations]
    done = generated_so_far(done_file, texts)
    todo = [i for i in range(len(texts)) if i not in done]
    if todo:
        model = merged_for_generation(model)
    device = next(model.parameters()).device
    padding: dict[str, Any] = {"padding": True}
    cache: dict[str, str] = {}
    if static_cache and todo:
        longest = max(len(tokenizer(texts[i], add_special_tokens=False)["input_ids"]) for i in todo)
        padding, cache = {"padding": "max_length", "max_length": longest}, {"cache_implementation": "static"}
    eos = tokenizer.eos_token_id
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"  # generation continues from the right end of every row
    rows_per_call = 0
    try:
        for rows in generation_chunks(len(todo), n, batch):
            indices = todo[rows.start:rows.stop]
            chunk = [texts[i] for i in indices]
            if cache:  # one compiled shape: a last, smaller call is filled up with copies of its last prompt
                rows_per_call = rows_per_call or len(chunk)  # (their completions are dropped)
                chunk += chunk[-1:] * (rows_per_call - len(chunk))
            encoded = tokenizer(chunk, return_tensors="pt", add_special_tokens=False, **padding).to(device)
            sampling = ({"do_sample": True, "temperature": temperature} if temperature > 0
                        else {"do_sample": False})
            with torch.no_grad():
                generated = model.generate(**encoded, max_new_tokens=max_tokens, num_return_sequences=n,
                                           use_cache=True, pad_token_id=tokenizer.pad_token_id, **sampling,
                                           **cache)
            width = encoded["input_ids"].shape[1]
            lengths = encoded["attention_mask"].sum(dim=1).tolist()
            lines = []
            for i, index in enumerate(indices):
                group = []
                for j in range(n):
                    row = generated[i * n + j, width:].tolist()
                    ended = eos in row
                    row = row[: row.index(eos) + 1] if ended else row
                    group.append({"text": tokenizer.decode(row, skip_special_tokens=True),
                                  "tokens_in": lengths[i], "tokens_out": len(row),
                                  "finish_reason": "stop" if ended else "length"})
                done[index] = group
                lines.append(json.dumps({"index": index, "prompt_sha": prompt_sha(texts[index]),
                                         "group": group}))
            if done_file is not None:
                with done_file.open("a") as f:
                    f.write("".join(line + "\n" for line in lines))
    finally:
        tokenizer.padding_side = side
    return [done[i] for i in range(len(texts))]


def heldout_records(model: Any, tokenizer: Any, problems: Sequence[Problem], scorer: Scorer, prompts: Prompts,
                    run_dir: Path, step: int, model_label: str, samples: int, max_tokens: int,
                    concurrency: int = 4, batch: int = 128, suite: str | None = None,
                    static_cache: bool = False) -> list[dict]:
    """Evaluate `model` on `problems`; returns the metrics records (also appended to
    metrics.jsonl). A greedy or sampled evaluation already recorded for this model
    label, step and suite (a resumed run) is not repeated. `suite`: the name of a
    held-out suite other than the training suite's (None: the training suite's).
    `static_cache`: generate with a static KV cache (`generate_batched`)."""
    done = {(r.get("model_label"), r.get("step"), r.get("label"), r.get("suite"))
            for r in read_metrics(run_dir) if r.get("phase") == "heldout"}
    runs = [("greedy", 1, 0.0)] + ([("sampled", samples, SAMPLING_TEMPERATURE)] if samples > 0 else [])
    runs = [run for run in runs if (model_label, step, run[0], suite) not in done]
    if not runs:
        return []
    was_training = model.training
    model.eval()
    records = []
    try:
        for label, n, temperature in runs:
            where = "" if suite is None else f"-{heldout_dir_name(suite)}"
            bench_dir = run_dir / "heldout" / f"{model_label}-{label}-step{step}{where}"
            bench_dir.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            groups = generate_batched(model, tokenizer, [prompts.initial(p) for p in problems], n,
                                      temperature, max_tokens, batch, bench_dir / "generated.partial.jsonl",
                                      static_cache)
            generation_s = time.monotonic() - started
            name = f"train:{model_label}@{step}"
            replay = write_replay(bench_dir / "completions.jsonl", [
                {"problem_id": p.id, "turn": 1, "sample": j, "model": name, **c}
                for p, group in zip(problems, groups, strict=True) for j, c in enumerate(group)])
            bench = run_bench(ReplayPolicy(replay), problems, bench_dir, scorer,
                              AgentConfig(turns=1, samples=n, temperature=temperature, max_tokens=max_tokens),
                              prompts=prompts, kernel_db=None, problem_concurrency=concurrency,
                              info={"heldout": True, "step": step, "model_label": model_label})
            m = bench.metrics["all"]
            record = {"phase": "heldout", "step": step, "label": label, "model_label": model_label,
                      "split": "test", **({} if suite is None else {"suite": suite}),
                      "problems": m.problems, "attempts": m.attempts, "format_rate": m.format_rate,
                      "compile_rate": m.compile_rate, "correct_rate": m.correct_rate,
                      "solved_rate": m.solved_rate, **m.pass_at_k, "fast_1": m.fast_p_eager.get("fast_1"),
                      "fast_1_inductor": m.fast_p_inductor.get("fast_1"), "status_counts": m.status_counts,
                      "refused_problems": m.refused_problems,
                      "generation_s": round(generation_s, 2),
                      "eval_s": round(time.monotonic() - started - generation_s, 2)}
            append_metrics(run_dir, record)
            records.append(record)
    finally:
        if was_training:
            model.train()
    return records
