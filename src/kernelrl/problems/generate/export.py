"""A generated set as a Hugging Face dataset: parquet files per split and a dataset card (fields, license,
generator version, the manifest's counts), loadable with `datasets.load_dataset("parquet", data_dir=...)` or
from the Hub once pushed. Needs the `datasets` library (the `train` extra)."""

from __future__ import annotations

import json
from pathlib import Path

FIELDS = {
    "id": "the problem id in the generated suite (`level{difficulty}/{index}_{family}`)",
    "family": "op family (`gen_map`, `gen_map_multi`, `gen_reduce`, `gen_scan`, `gen_rownorm`, "
              "`gen_gemm_epilogue`)",
    "ops": "the ops of the forward in order, as METADATA names them",
    "aten_ops": "the ATen compute ops the reference ran on its check set, first-seen order",
    "difficulty": "the op count",
    "dtype": "float32, float16 or bfloat16",
    "gpu_only": "bfloat16: the CPU's Triton interpreter cannot run a solution",
    "split": "`train`, or `test` (held out within its family, never trained on)",
    "source": "the problem file (KernelBench format: Model, get_inputs, get_init_inputs, input sets, "
              "METADATA)",
    "solution": "a template Triton `ModelNew` the evaluator judged correct without findings, or null",
    "near_duplicate": "hash of the program with constants and sizes abstracted (unique in the set)",
    "fingerprint": "hash of the outputs on fixed inputs of the check set (unique in the set)",
}


def export_dataset(out: Path, dest: Path | None = None) -> Path:
    """Write `dest` (default `OUT/dataset`): `data/{split}.parquet` and `README.md`, from `kernelrl gen`'s
    output directory `out`. Returns `dest`."""
    try:
        import datasets
    except ImportError as exc:
        raise RuntimeError("exporting a dataset needs the `datasets` library: "
                           "pip install 'kernelrl[train]'") from exc
    out = Path(out)
    dest = Path(dest) if dest is not None else out / "dataset"
    manifest = json.loads((out / "manifest.json").read_text())
    rows: dict[str, list[dict]] = {}
    for line in (out / "problems.jsonl").read_text().splitlines():
        problem = json.loads(line)
        solution = out / "solutions" / f"{problem['id']}.py"
        row = {name: problem.get(name) for name in FIELDS if name not in ("gpu_only", "solution")}
        row["gpu_only"] = problem["dtype"] == "bfloat16"
        row["solution"] = solution.read_text() if solution.is_file() else None
        rows.setdefault(problem["split"], []).append(row)
    (dest / "data").mkdir(parents=True, exist_ok=True)
    for split, split_rows in sorted(rows.items()):
        datasets.Dataset.from_list(split_rows).to_parquet(str(dest / "data" / f"{split}.parquet"))
    checked = out / "solutions.json"
    verified = json.loads(checked.read_text()) if checked.is_file() else None
    (dest / "README.md").write_text(_card(manifest, {s: len(r) for s, r in rows.items()}, verified))
    return dest


def _card(manifest: dict, counts: dict[str, int], verified: dict | None) -> str:
    configs = "\n".join(f"  - split: {split}\n    path: data/{split}.parquet" for split in sorted(counts))
    fields = "\n".join(f"- `{name}`: {text}" for name, text in FIELDS.items())
    solutions = ("no solutions were written (`kernelrl gen --solutions`)" if verified is None else
                 f"{verified['kept']} of {verified['verified']} verified template solutions kept "
                 f"({verified['kept_per_family']}); {len(verified['not_verified_gpu_only'])} bfloat16 ones "
                 "not verified without a GPU and left out")
    return f"""---
license: apache-2.0
task_categories:
- text-generation
tags:
- gpu-kernels
- triton
- kernelbench
configs:
- config_name: default
  data_files:
{configs}
---

# Generated GPU-kernel problems ({manifest['generator']}, seed {manifest['seed']})

KernelBench-format PyTorch problems composed from op families by `kernelrl gen`, each kept only through its
gates: {'; '.join(manifest['gates'])}. {manifest['kept']} kept of {manifest['candidates']} generated;
rejects by reason: {manifest['rejects_by_reason']} (every reject and its reason: `manifest.json` beside
the set). Splits: {counts}. Decontaminated against: {', '.join(manifest['decontaminated_against'])}.
Solutions: {solutions}.

## Fields

{fields}
"""
