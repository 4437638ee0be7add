"""Held-out generation speed: decode steps a second for a LoRA-adapted policy, generated from as the training
run does (`kernelrl.train.heldout.generate_batched`'s shape: `batch` sequences left-padded, up to `new`
tokens), three ways:

- `adapted`: the PEFT model as the trainer holds it (every adapted layer runs its adapter's operators),
- `merged`:  a copy with the adapter merged into the weights (what held-out generation uses),
- `static`:  the merged copy with a static KV cache (transformers compiles the decode step for it).

The weights are random (the speed of a decode step does not depend on them) and every row generates exactly
`new` tokens (`min_new_tokens`), so no model files are needed: SmolLM2-135M's shape by default.

  python bench/generation.py --device cuda --batch 128 --prompt 1000 --new 256 --json gen.json
  python bench/generation.py --device cpu --batch 2 --prompt 64 --new 8 --ways adapted,merged  # code paths
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from peft import get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kernelrl.train.config import SFTConfig  # noqa: E402
from kernelrl.train.merged import merged_for_generation  # noqa: E402
from kernelrl.train.model import lora_config  # noqa: E402

SMOLLM2_135M = {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 8192,
                "tie_word_embeddings": True, "rope_theta": 100000.0}


def adapted_model(device: str, dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M)).to(device=device, dtype=dtype)
    model = get_peft_model(model, lora_config(SFTConfig(run_dir="r")))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:  # a trained adapter's B is not zero
                param.normal_(0, 0.02)
    return model.eval()


def timed_generate(model, ids, mask, new: int, **extra) -> float:
    if ids.is_cuda:
        torch.cuda.synchronize()
    started = time.perf_counter()
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new,
                             do_sample=False, pad_token_id=0, use_cache=True, **extra)
    if ids.is_cuda:
        torch.cuda.synchronize()
    assert out.shape[1] == ids.shape[1] + new
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--prompt", type=int, default=1000, help="prompt tokens (the longest row's)")
    parser.add_argument("--new", type=int, default=256)
    parser.add_argument("--ways", default="adapted,merged,static")
    parser.add_argument("--repeats", type=int, default=2,
                        help="timed generate calls a way (after one warm-up)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    adapted = adapted_model(args.device, getattr(torch, args.dtype))
    merged = merged_for_generation(adapted)
    ids = torch.randint(1, 1000, (args.batch, args.prompt), device=args.device)
    mask = torch.ones_like(ids)
    mask[1::2, : args.prompt // 4] = 0  # half the rows left-padded, as a batch of prompts of two lengths
    ways = {"adapted": (adapted, {}), "merged": (merged, {}),
            "static": (merged, {"cache_implementation": "static"})}
    rows = []
    for way in args.ways.split(","):
        model, extra = ways[way]
        warm = timed_generate(model, ids, mask, args.new, **extra)  # first call: compiles, allocates
        times = [timed_generate(model, ids, mask, args.new, **extra) for _ in range(args.repeats)]
        best = min(times)
        row = {"way": way, "batch": args.batch, "prompt": args.prompt, "new": args.new, "dtype": args.dtype,
               "first_s": round(warm, 2), "times_s": [round(t, 2) for t in times],
               "ms_per_step": round(1000 * best / args.new, 2),
               "tokens_per_s": round(args.batch * args.new / best)}
        rows.append(row)
        print(f"{way:8s} {row['ms_per_step']:8.2f} ms/step {row['tokens_per_s']:8d} tokens/s "
              f"(first call {warm:.1f} s, then {row['times_s']})", flush=True)
    info = {"device": torch.cuda.get_device_name(0) if args.device == "cuda" else args.device,
            "torch": torch.__version__, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(info, indent=1) + "\n")


if __name__ == "__main__":
    main()
