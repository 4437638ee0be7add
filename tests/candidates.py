"""Candidate sources used by the tests (beyond the shipped examples)."""

RELU_HEADER = '''
import os
import sys
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def relu(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 16384),)](x, y, x.numel(), BLOCK=16384)
    return y
'''


def relu_candidate(forward_body: str = "return relu(x)", module_extra: str = "") -> str:
    return RELU_HEADER + module_extra + f'''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        {forward_body}
'''


SYNTAX_ERROR = relu_candidate("return relu(x")
RAISE_AT_IMPORT = relu_candidate(module_extra="\nraise ValueError('broken at import')\n")
RAISE_IN_FORWARD = relu_candidate("raise RuntimeError('kernel launch failed: boom')")
SYS_EXIT = relu_candidate("sys.exit(0)")
OS_EXIT = relu_candidate("os._exit(0)")
ABORT = relu_candidate("os.abort()")
INFINITE_LOOP = relu_candidate("while True:\n            pass")
HUGE_ALLOC = relu_candidate("big = torch.ones(30 * 2**30 // 4)\n        return relu(x) + big[0] * 0")
HUGE_BYTEARRAY = relu_candidate("big = bytearray(30 * 2**30)\n        return relu(x)")
PRINT_100MB = relu_candidate(module_extra="\nsys.stdout.write('x' * 100_000_000 + '\\nEND-OF-SPAM\\n')\n")
MUTATES_INPUT = relu_candidate("x.relu_()\n        return x.clone()")
WRONG_SHAPE = relu_candidate("return relu(x)[:-1]")
WRONG_DTYPE = relu_candidate("return relu(x).double()")
NAN_OUTPUT = relu_candidate("y = relu(x)\n        y[0, 0] = float('nan')\n        return y")
RETURNS_FLOAT = relu_candidate("return 1.0")
NO_MODELNEW = RELU_HEADER + "\nclass Model(nn.Module):\n    pass\n"
CUDA_CPP = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = "torch::Tensor relu(torch::Tensor x) { return x.clamp_min(0); }"
mod = load_inline(name="relu_ext", cpp_sources=cuda_src, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return mod.relu(x)
'''
