"""How much do the SFT model's samples differ at temperature 0.8 and 1.0, and how many are correct (CPU mode)?"""
import json, sys, time, re
import torch
from kernelrl.problems import load_suite
from kernelrl.train.data import prompt_rows, select_problems
from kernelrl.train.session import run_prompts
from kernelrl.train.config import GRPOConfig
from kernelrl.train.model import load_base_model, merge_adapter, load_tokenizer, Placement
from kernelrl.train.heldout import generate_batched
from kernelrl.evaluate import open_scorer

suite = load_suite("/tmp/gen/gen-2500")
prompts = run_prompts(GRPOConfig(run_dir="r", suite="/tmp/gen/gen-2500"))
ids = sys.argv[1].split(",")
problems = [p for p in select_problems(suite, ids)]
rows = prompt_rows(problems, prompts, suite)
prob = {p.id: p for p in problems}
tok = load_tokenizer("smollm2")
m = merge_adapter(load_base_model("smollm2", Placement("cpu", False, False)), "/tmp/s3/run/sft/adapter").eval()
scorer = open_scorer("cpu", max_concurrency=2)
out = {}
for temp in (0.8, 1.0):
    torch.manual_seed(0)
    t0 = time.time()
    groups = generate_batched(m, tok, [r["prompt"] for r in rows], 8, temp, 900, 8)
    gen_s = time.time() - t0
    for row, group in zip(rows, groups):
        texts = [c["text"] for c in group]
        norm = {re.sub(r"\s+", " ", t) for t in texts}
        results = list(scorer.evaluate_many([(prob[row["problem_id"]], t) for t in texts], kind="completion", ordered=True))
        statuses = [r.status.value for r in results]
        out[(temp, row["problem_id"])] = {"distinct": len(norm), "statuses": statuses}
        print(temp, row["problem_id"], "distinct", len(norm), "correct", statuses.count("correct"), statuses, f"gen {gen_s:.0f}s", flush=True)
scorer.close()
