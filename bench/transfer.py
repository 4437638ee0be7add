"""How a large GPU output gets from the sandbox to the judge's GPU: the ways measured for
`tensor_files.HostStage`.

Times (median of 3) for a GPU tensor of `--gib` GiB (fp32): the plain path (`.cpu()` + write; read +
pageable H2D), a file mapped with `torch.from_file`, a pinned buffer, `cudaHostRegister` on the mapping, and
the pinned 64 MiB stage kernelrl uses (`write_tensor`/`read_tensor` with a `HostStage`), plus the comparison
on the GPU. Needs a CUDA GPU; files go to `--dir` (default /dev/shm, as the evaluator's).

  python bench/transfer.py            # 1 GiB
  python bench/transfer.py --gib 0.25
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0, help="tensor size in GiB (default 1)")
    parser.add_argument("--dir", default="/dev/shm", help="where the tensor file goes")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("bench/transfer.py needs a CUDA GPU", file=sys.stderr)
        return 2
    from kernelrl.sandbox.tensor_files import HostStage, read_tensor, write_tensor
    from kernelrl.sandbox.tensorio import tensor_meta
    from kernelrl.verify.compare import compare_tensors

    def timed(label: str, fn, n: int = 3):
        seconds = []
        for _ in range(n):
            torch.cuda.synchronize()
            start = time.perf_counter()
            result = fn()
            torch.cuda.synchronize()
            seconds.append(time.perf_counter() - start)
        print(f"{label:48s} median {statistics.median(seconds) * 1e3:8.1f} ms  min "
              f"{min(seconds) * 1e3:8.1f} ms", flush=True)
        return result

    x = torch.randn(int(args.gib * (1 << 28)), device="cuda")
    nbytes = x.numel() * 4
    ref = x.clone()
    meta = tensor_meta(x)
    path = os.path.join(args.dir, f"kernelrl-transfer-{os.getpid()}.bin")
    print(f"{torch.cuda.get_device_name(0)}, {nbytes / (1 << 30):.2f} GiB fp32, file {path}")
    try:
        timed("plain: .cpu()", lambda: x.cpu())
        timed("plain: write_tensor (.cpu() + write)", lambda: write_tensor(path, x))
        host = timed("plain: read_tensor (to host)", lambda: read_tensor(path, meta))
        timed("plain: pageable H2D", lambda: host.to("cuda"))
        timed("compare on the GPU", lambda: compare_tensors(ref, x, 1e-5, 1e-5))

        def mapped_write():
            os.unlink(path)
            with open(path, "wb") as f:
                f.truncate(nbytes)
            mapped = torch.from_file(path, shared=True, size=nbytes, dtype=torch.uint8).view(torch.float32)
            mapped.copy_(x)

        timed("mapped file: from_file(shared) + copy_", mapped_write)
        timed("mapped file: from_file + H2D", lambda: torch.from_file(
            path, shared=True, size=nbytes, dtype=torch.uint8).view(torch.float32).to("cuda"))
        timed("pinned: allocate", lambda: torch.empty(x.numel(), dtype=torch.float32, pin_memory=True), n=2)
        pinned = torch.empty(x.numel(), dtype=torch.float32, pin_memory=True)
        timed("pinned: D2H", lambda: pinned.copy_(x))
        timed("pinned: H2D", lambda: pinned.to("cuda"))

        def registered():
            mapped = torch.from_file(path, shared=True, size=nbytes, dtype=torch.uint8)
            cudart = torch.cuda.cudart()
            cudart.cudaHostRegister(mapped.data_ptr(), nbytes, 0)
            mapped.view(torch.float32).copy_(x)
            cudart.cudaHostUnregister(mapped.data_ptr())

        timed("mapped file + cudaHostRegister + D2H", registered, n=2)
        stage = HostStage()
        timed("HostStage: write_tensor (64 MiB chunks)", lambda: write_tensor(path, x, stage))
        back = timed("HostStage: read_tensor onto the GPU", lambda: read_tensor(path, meta, "cuda", stage))
        assert torch.equal(back, x)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
