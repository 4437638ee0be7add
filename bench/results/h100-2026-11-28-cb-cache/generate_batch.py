"""transformers' continuous batching on a GPU with TRL's default cache (a share of free memory) and with the
cache kernelrl sizes to the step (`kernelrl.train.grpo.continuous_batching_cache`). SmolLM2-135M's shape with
random weights, so no model download is needed. Run from the repository root with PYTHONPATH=src; output in
generate_batch.log."""
import time

import torch
import transformers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
from transformers.generation import ContinuousBatchingConfig

from kernelrl.train.grpo import continuous_batching_cache


class Tok:  # every prompt 600 tokens
    def apply_chat_template(self, m, **k):
        return {"input_ids": list(range(600))}


cfg = continuous_batching_cache([{"prompt": []}], Tok(), 16, 768)
print("transformers", transformers.__version__, torch.cuda.get_device_name(0), "sized:", cfg)
torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                     num_attention_heads=9, num_key_value_heads=3, vocab_size=49152))
model = model.cuda().to(torch.bfloat16).eval()
prompts = [[1 + i] * 600 for i in range(16)]
gen = GenerationConfig(max_new_tokens=768, do_sample=True, temperature=1.0, eos_token_id=None)
for rep in range(2):
    for name, kw in (("default (TRL: max_memory_percent 0.5)", {"max_memory_percent": 0.5}),
                     ("sized", {"max_memory_percent": 0.5, **cfg})):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t = time.time()
        out = model.generate_batch(prompts, gen, continuous_batching_config=ContinuousBatchingConfig(**kw),
                                   progress_bar=False)
        torch.cuda.synchronize()
        lens = sorted(len(o.generated_tokens) for o in out.values())
        print(f"{name}: {time.time()-t:.2f} s, peak {torch.cuda.max_memory_allocated()/2**30:.2f} GiB, "
              f"{len(out)} sequences, tokens min {lens[0]} max {lens[-1]}", flush=True)
