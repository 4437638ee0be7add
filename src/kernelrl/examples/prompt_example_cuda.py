# The prompts' worked example answer (prompt_example_problem.py): a correct CUDA C++ kernel built with
# load_inline (GPU only).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void half_abs_diff_kernel(const float* __restrict__ x, const float* __restrict__ z,
                                     float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fabsf(x[i] - z[i]) * 0.5f;
}

torch::Tensor half_abs_diff(torch::Tensor x, torch::Tensor z) {
    auto xc = x.contiguous();
    auto zc = z.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    half_abs_diff_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), zc.data_ptr<float>(),
                                               y.data_ptr<float>(), n);
    return y;
}
"""

half_abs_diff_ext = load_inline(
    name="kernelrl_prompt_example_half_abs_diff",
    cpp_sources="torch::Tensor half_abs_diff(torch::Tensor x, torch::Tensor z);",
    cuda_sources=cuda_source,
    functions=["half_abs_diff"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return half_abs_diff_ext.half_abs_diff(x, z)
