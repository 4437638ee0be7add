"""The kernel share's accounting of intervals and ops (kernelrl.sandbox.kernel_share)."""

from __future__ import annotations

import pytest
import torch


class SpanRecorder:
    """A stand-in for the kernel share's tracer: records the (kind, name) of each interval it is asked to
    open."""

    def __init__(self):
        self.opened = []

    def begin(self, kind, name):
        self.opened.append((kind, name))
        return name

    def end(self, span):
        pass


def test_kernel_share_counts_nested_intervals_once_and_work_it_never_saw():
    from kernelrl.sandbox.kernel_share import Span, share_of

    # an extension call (mine, 10 ms) that spends 4 ms in an ATen matmul it calls; a copy op (other, 2 ms)
    extension = Span("mine", "gemm_ext", ms=10.0, children=[Span("other", "mm", ms=4.0)])
    copy = Span("other", "copy_", ms=2.0)
    share = share_of([extension, copy], forward_ms=12.5)
    assert share["mine_us"] == pytest.approx(6000.0) and share["other_us"] == pytest.approx(6000.0)
    assert share["fraction"] == pytest.approx(6.0 / 12.5)  # the forward's 0.5 ms between intervals counts too
    assert share["top"][0][1] == pytest.approx(6000.0)
    # a custom op (other) that launches the candidate's Triton kernel inside it: the kernel counts as mine
    custom = Span("other", "my_op", ms=3.0, children=[Span("mine", "relu_kernel", ms=2.5)])
    assert share_of([custom], forward_ms=3.0)["fraction"] == pytest.approx(2.5 / 3.0)
    # work no interval saw (a CUDA graph replay): the whole forward is the denominator
    assert share_of([Span("mine", "copy_kernel", ms=0.1)], forward_ms=5.0)["fraction"] == pytest.approx(0.02)
    assert share_of([], forward_ms=0.0)["fraction"] is None


def test_kernel_share_times_ops_that_launch_work_and_skips_views_and_allocations():

    from kernelrl.sandbox.kernel_share import _TimedOps

    names = SpanRecorder()
    x = torch.randn(8, 8)
    with _TimedOps(names):
        y = torch.matmul(x, x).relu()
        torch.empty(3)
        y.view(64)
        y.t().contiguous()
        torch.nn.functional.linear(x, x)
    assert names.opened == [("other", "mm"), ("other", "relu"), ("layout", "clone"), ("other", "mm")]


def test_kernel_share_leaves_same_dtype_layout_copies_out_of_the_share():
    """h17 (an honest relu between x.t().contiguous() and yt.t().contiguous()) was rejected on an H100 at 22%:
    the two strided copies took most of forward's GPU time. A same-dtype layout copy computes nothing:
    neutral."""
    from kernelrl.sandbox.kernel_share import Span, share_of

    h17 = [Span("layout", "clone", ms=1.75), Span("mine", "relu_kernel", ms=1.0),
           Span("layout", "clone", ms=1.75)]
    share = share_of(h17, forward_ms=4.5)
    assert share["fraction"] == pytest.approx(1.0) and share["fraction"] >= 0.5
    assert share["layout_us"] == pytest.approx(3500.0) and share["total_us"] == pytest.approx(1000.0)
    # PyTorch doing the work (or a casting copy, which is "other") still counts against the candidate
    torch_work = [Span("other", "add", ms=3.5), Span("mine", "relu_kernel", ms=1.0)]
    assert share_of(torch_work, forward_ms=4.5)["fraction"] == pytest.approx(1.0 / 4.5)
    cast = [Span("other", "_to_copy", ms=3.5), Span("mine", "relu_kernel", ms=1.0)]
    assert share_of(cast, forward_ms=4.5)["fraction"] == pytest.approx(1.0 / 4.5)
    # a layout span's children count to their own kinds; forward time no interval saw still counts
    nested = Span("layout", "copy_", ms=2.0, children=[Span("other", "mul", ms=1.5)])
    share = share_of([nested, Span("mine", "k", ms=1.0)], forward_ms=4.0)
    assert share["layout_us"] == pytest.approx(500.0) and share["fraction"] == pytest.approx(1.0 / 3.5)
    assert share_of([Span("layout", "clone", ms=2.0)], forward_ms=1.0)["fraction"] is None


def test_kernel_share_classifies_copies_by_whether_they_keep_the_dtype():

    from kernelrl.sandbox.kernel_share import _span_kind, _TimedOps

    aten = torch.ops.aten
    x, h = torch.randn(4, 4), torch.randn(4, 4).half()

    def kind(op, *args, **kwargs):
        return _span_kind(op.overloadpacket.__name__, args, kwargs)

    assert kind(aten.clone.default, x.t()) == "layout"
    assert kind(aten._to_copy.default, x, dtype=torch.float32) == "layout"
    assert kind(aten._to_copy.default, x, dtype=torch.float16) == "other"
    assert kind(aten.copy_.default, torch.empty(4, 4), x) == "layout"
    assert kind(aten.copy_.default, torch.empty(4, 4, dtype=torch.float16), x) == "other"
    assert kind(aten._copy_from.default, x, h) == "other"
    assert kind(aten.clone.out, x, out=h) == "other"
    assert kind(aten.clone.default, x._neg_view()) == "other"  # materializing a negated view negates
    assert kind(aten.add.Tensor, x, x) == "other"
    # constant fills compute nothing from the inputs (an accumulator for atomics): neutral, as the census
    # allows them
    assert kind(aten.zero_.default, x) == kind(aten.zeros_like.default, x) == "layout"
    assert kind(aten.fill_.Scalar, x, 1.0) == kind(aten.full.default, [4], 2.0) == "layout"
    assert kind(aten.fill_.Tensor, x, x.sum()) == "other"  # a computed value copied in

    kinds = SpanRecorder()
    with _TimedOps(kinds):
        x.t().contiguous()
        x.to(torch.float16)
        torch.empty(4, 4, dtype=torch.float64).copy_(x)
        torch.empty(4, 4).copy_(x.t())
        x.clone().add_(1)
    assert kinds.opened == [("layout", "clone"), ("other", "_to_copy"), ("other", "copy_"),
                            ("layout", "copy_"), ("layout", "clone"), ("other", "add_")]
