"""The launch census: the candidate's own kernels, extensions, tracer hooks (kernelrl.sandbox.census)."""

from __future__ import annotations

import shutil

import pytest
import torch


def test_census_matches_only_the_candidates_own_kernel_names():
    from kernelrl.sandbox.census import LaunchCensus

    census = LaunchCensus("kernelrl_candidate")
    census.triton_kernels.add("relu_kernel")
    census.cuda_kernels.add("gemm")
    assert census.is_candidate_kernel("relu_kernel")
    assert census.is_candidate_kernel("_Z4gemmPKfS0_Pfiii")  # mangled CUDA C++ name
    assert not census.is_candidate_kernel("relu_kernel_0d1d")  # another kernel that merely shares a prefix
    assert not census.is_candidate_kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32")
    # demangled, as torch's profiler names CUDA C++ kernels
    assert census.is_candidate_kernel("gemm(float const*, float const*, float*, int, int, int)")
    assert census.is_candidate_kernel("void gemm<float, 128>(float const*, float*, int)")
    # a candidate kernel named like one of PyTorch's does not claim PyTorch's (namespaced) kernels
    census.cuda_kernels.add("elementwise_kernel")
    assert not census.is_candidate_kernel(
        "void at::native::elementwise_kernel<128, 4, "
        "at::native::gpu_kernel_impl_nocast<>(at::TensorIteratorBase&)>(int)")
    assert not census.is_candidate_kernel("_ZN2at6native18elementwise_kernelILi128ELi4EEEviT1_")


def test_census_counts_calls_into_a_built_extension_and_reads_its_kernel_names():
    import types

    from kernelrl.sandbox.census import LaunchCensus

    built = types.ModuleType("relu_ext")
    built.relu = lambda x: x
    census = LaunchCensus("kernelrl_candidate")
    load_inline = census._wrap_loader(lambda *args, **kwargs: built)
    module = load_inline("relu_ext", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                         cuda_sources="__global__ void __launch_bounds__(256) relu_kernel(float* x) {}",
                         functions=["relu"])
    assert census.cuda_kernels == {"relu_kernel"} and census.launches == 0
    assert module.relu(3) == 3 and module.relu(4) == 4
    assert census.launches == 2


def test_census_brackets_the_candidates_launches_for_a_tracer():
    from types import SimpleNamespace

    from kernelrl.sandbox.census import LaunchCensus

    log = []

    class Tracer:
        def begin(self, kind, name):
            log.append(("begin", kind, name))
            return name

        def end(self, span):
            log.append(("end", span))

    def relu_launch(x):
        log.append(("call", x))
        return x

    built = SimpleNamespace(relu_launch=relu_launch)
    census = LaunchCensus("kernelrl_candidate")
    module = census._wrap_loader(lambda *args, **kwargs: built)(
        "ext", "", "__global__ void relu_kernel(float* x) {}")
    module.relu_launch(1)  # no tracer: counted only
    census.tracer = Tracer()
    module.relu_launch(2)
    assert census.launches == 2
    assert log == [("call", 1), ("begin", "mine", "relu_launch"), ("call", 2), ("end", "relu_launch")]


@pytest.mark.slow  # builds a C++ extension
def test_aten_calls_inside_a_cpp_extension_are_seen_nested_in_its_span(tmp_path):
    """A load_inline function that calls ATen (torch::mm) must not have that time counted as the candidate's:
    the dispatch mode sees the calls made from C++, opened inside the extension's own span. Real build
    (~25 s)."""

    from torch.utils.cpp_extension import load_inline

    from kernelrl.sandbox.census import LaunchCensus
    from kernelrl.sandbox.kernel_share import _TimedOps

    if shutil.which("c++") is None or shutil.which("ninja") is None:
        pytest.skip("no C++ compiler or ninja to build the extension")
    census = LaunchCensus("kernelrl_candidate")
    build = census._wrap_loader(load_inline)
    ext = build("kr_aten_inside", cpp_sources="#include <torch/extension.h>\n"
                "torch::Tensor square_mm(torch::Tensor a) { return torch::mm(a, a).relu(); }\n",
                functions=["square_mm"], build_directory=str(tmp_path))

    class Nesting:  # the tracer protocol, recording who opened inside whom
        def __init__(self):
            self.open, self.seen = [], []

        def begin(self, kind, name):
            self.seen.append((kind, name, tuple(n for _, n in self.open)))
            self.open.append((kind, name))
            return name

        def end(self, span):
            self.open.pop()

    tracer = Nesting()
    census.tracer = tracer
    x = torch.randn(8, 8)
    with _TimedOps(tracer):
        y = ext.square_mm(x)
    assert torch.allclose(y, (x @ x).relu())
    assert tracer.seen == [("mine", "square_mm", ()), ("other", "mm", ("square_mm",)),
                           ("other", "relu", ("square_mm",))]
