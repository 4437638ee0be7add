"""Where does HF generation time go for SmolLM2-135M on the GPU? (scratch probe)"""
import sys, time, json, torch
from kernelrl.train.model import load_base_model, load_tokenizer, Placement, merge_adapter
from peft import LoraConfig, get_peft_model
gguf, adapter = sys.argv[1], sys.argv[2]
tok = load_tokenizer(gguf)
place = Placement("cuda", True, True)
m = merge_adapter(load_base_model(gguf, place), adapter)
tok.padding_side = "left"
prompt = [{"role": "user", "content": "Write a Triton kernel for relu. " * 60}]
text = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
enc = tok([text] * 16, return_tensors="pt", padding=True, add_special_tokens=False).to("cuda")
print("prompt tokens", enc["input_ids"].shape, flush=True)
def run(model, label, n=128, **kw):
    torch.cuda.synchronize(); t = time.monotonic()
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=n, min_new_tokens=n, do_sample=True, temperature=0.8,
                             pad_token_id=tok.pad_token_id, **kw)
    torch.cuda.synchronize(); dt = time.monotonic() - t
    print(json.dumps({"label": label, "new_tokens": out.shape[1] - enc["input_ids"].shape[1], "s": round(dt, 2),
                      "ms_per_token": round(1000 * dt / n, 1)}), flush=True)
m.eval(); run(m, "warmup", 16)
run(m, "merged eval")
pm = get_peft_model(m, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj","k_proj","v_proj","o_proj","gate_proj","up_proj","down_proj"], task_type="CAUSAL_LM"))
pm.eval(); run(pm, "peft unmerged eval")
pm.train(); run(pm, "peft unmerged train-mode")
pm.gradient_checkpointing_enable(); pm.train(); run(pm, "peft train + checkpointing")
pm.eval(); run(pm, "peft eval + checkpointing-enabled")
pm.gradient_checkpointing_disable(); pm.eval()
run(pm, "peft eval static cache", cache_implementation="static")
