"""A `Spec` as a KernelBench-format problem file: Model, get_inputs, get_init_inputs, named input sets,
METADATA. The text depends on the spec and the metadata only, so the same seed writes byte-identical files."""

from __future__ import annotations

from kernelrl.problems.generate.families import TORCH_DTYPE, Spec


def _shape(dims: tuple[str, ...]) -> str:
    return ", ".join("1" if d == "one" else d for d in dims)


def _call(names: tuple[str, ...], sizes: tuple[int, ...], keep: tuple[str, ...]) -> str:
    return ", ".join(f"{n}={s}" for n, s in zip(names, sizes, strict=True) if n in keep)


def render(spec: Spec, metadata: dict) -> str:
    dtype = TORCH_DTYPE[spec.dtype]
    init_dims = spec.module.dims if spec.module else ()
    used = {d for i in spec.inputs for d in (*i.dims, *([i.below] if i.below else []))}
    input_dims = tuple(d for d in spec.dims if d not in init_dims or d in used)
    bench = spec.sets["bench"]
    if spec.module:
        args = ", ".join(f"{d}: int" for d in init_dims)
        init = (f"    def __init__(self, {args}):\n"
                f"        super().__init__()\n"
                f"        self.{spec.module.attr} = {spec.module.build.format(dtype=dtype)}\n")
    else:
        init = "    def __init__(self):\n        super().__init__()\n"
    params = ", ".join(f"{i.name}: torch.Tensor" for i in spec.inputs)
    body = "\n".join(f"        {line}" for line in spec.lines)
    sets = "\n".join(f'        "{name}": dict({_call(spec.dims, sizes, spec.dims)}),'
                     for name, sizes in spec.sets.items())
    tensors = ", ".join(f"torch.randint(0, {i.below}, ({_shape(i.dims)},))" if i.below else
                        f"torch.randn({_shape(i.dims)}, dtype={dtype})" for i in spec.inputs)
    init_args = _call(spec.dims, bench, init_dims)
    return f'''import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {metadata!r}


class Model(nn.Module):
    """{spec.docstring}"""

{init}
    def forward(self, {params}) -> torch.Tensor:
        y = x
{body}
        return y


def get_input_sets():
    return {{
{sets}
    }}


def get_inputs({_call(spec.dims, bench, input_dims)}):
    return [{tensors}]


def get_init_inputs({init_args}):
    return [{", ".join(init_dims)}]
'''
