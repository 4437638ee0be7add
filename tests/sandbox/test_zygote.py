"""The zygote's CUDA check (kernelrl.sandbox.zygote)."""

from __future__ import annotations

import pytest
import torch


def test_zygote_refuses_to_serve_when_its_children_could_not_use_cuda(monkeypatch):

    from kernelrl.sandbox import zygote

    zygote._assert_children_can_use_cuda()  # this process never initialized CUDA: a probe child is fine
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)  # as after CUDA started in the parent
    with pytest.raises(RuntimeError, match="initialized CUDA"):
        zygote._assert_children_can_use_cuda()
