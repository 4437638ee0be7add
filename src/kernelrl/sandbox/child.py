"""The trusted stub that runs inside the sandboxed candidate process.

Order matters: confine the process while it is single-threaded, import torch, initialize the device,
capture the timer's functions, and only then import the candidate. Everything after that import runs next
to untrusted code, so this process only *reports* (outputs as raw tensor files, raw times, errors); the
verdict is decided elsewhere. Messages go out as JSON lines on the protocol fd.

Usage: python -m kernelrl.sandbox.child REQUEST.json
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

from kernelrl.sandbox import isolation

_clock = time.perf_counter  # captured before any candidate code exists


class _Channel:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def send(self, event: str, **fields) -> None:
        data = (json.dumps({"event": event, **fields}) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


def _error_fields(exc: BaseException, stage: str) -> dict:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # drop the stub's own frames: the model only needs its code's part of the story
    text = "".join(line for line in lines if "kernelrl/sandbox/child.py" not in line)
    cls = type(exc)
    return {
        "stage": stage,
        "exc_type": f"{cls.__module__}.{cls.__qualname__}",
        "message": str(exc)[:2000],
        "traceback": text[-6000:],
    }


def _flatten_outputs(out) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, tuple | list) and all(isinstance(t, torch.Tensor) for t in out):
        return list(out)
    raise TypeError(
        f"forward must return a tensor or a tuple of tensors, got {type(out).__module__}.{type(out).__qualname__}"
    )


def _load_args(in_dir: str, trial: dict, device, read_tensor) -> tuple[list, list]:
    """Fresh copies of one trial's inputs, and forward's arguments (tensors and plain values) in order."""
    index = trial["index"]
    tensors = [
        read_tensor(os.path.join(in_dir, f"trial{index}_in{k}.bin"), meta).to(device)
        for k, meta in enumerate(trial["inputs"])
    ]
    args = [tensors[a["tensor"]] if "tensor" in a else a["value"] for a in trial["args"]]
    return tensors, args


def _init_process(channel: _Channel) -> None:
    """PID 1 of the sandbox's PID namespace: fork the real stub and reap. PID 1 ignores signals it has no
    handler for (abort() would not end it), so candidate code must never run as PID 1. When this process
    exits, the kernel kills everything left in the namespace."""
    isolation.make_undumpable()
    child = os.fork()
    if child == 0:
        return
    while True:
        pid, status = os.waitpid(-1, 0)  # also reaps orphans the candidate leaves behind
        if pid == child:
            if os.WIFSIGNALED(status):
                channel.send("terminated", signal=os.WTERMSIG(status))
            else:
                channel.send("terminated", exit_code=os.WEXITSTATUS(status))
            os._exit(0)


def main(argv: list[str]) -> None:
    request = json.loads(open(argv[1]).read())
    channel = _Channel(int(os.environ.pop("KERNELRL_PROTO_FD")))
    isolation.die_with_parent()
    in_pid_namespace = os.getpid() == 1
    if in_pid_namespace:
        _init_process(channel)
        isolation.die_with_parent()
    applied = ["process-group", "private-tmpdir", "env-allowlist"]
    network = isolation.isolate_network() if request["isolate_network"] else None
    if network:
        applied.append(network)
    import resource

    isolation.set_limit(resource.RLIMIT_CORE, 0)
    if isolation.set_limit(resource.RLIMIT_FSIZE, request["max_file_bytes"]):
        applied.append("rlimit-fsize")
    if isolation.no_new_privs():
        applied.append("no-new-privs")

    import importlib.util

    import torch

    from kernelrl.problems.input_sets import call_with, input_sets
    from kernelrl.sandbox.tensorio import ITEMSIZE, read_tensor, tensor_meta, write_tensor
    from kernelrl.timing.cuda_timer import TimerSettings, time_cuda

    gpu = request["mode"] == "gpu"
    if gpu:
        torch.cuda.init()
        torch.cuda.set_device(0)
        torch.empty(1, device="cuda")  # create the context now, before any confinement that breaks it
    # the same numerics as the judge's reference (no TF32 for fp32 matmuls and convolutions)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sync, event_cls = (torch.cuda.synchronize, torch.cuda.Event) if gpu else (None, None)
    if not gpu and request["memory_limit_bytes"]:
        # address-space caps break CUDA start-up (see DESIGN.md); on GPU the parent's RSS watchdog caps memory
        if isolation.set_limit(resource.RLIMIT_AS, request["memory_limit_bytes"]):
            applied.append("rlimit-as")
    if in_pid_namespace and request["readonly_fs"]:
        # after CUDA start-up; the Triton, Inductor and CUDA-extension caches live in the writable paths
        if isolation.readonly_filesystem(request["writable_paths"]):
            applied.append("readonly-fs")
    if isolation.drop_capabilities():  # after CUDA start-up, which may need them
        applied.append("no-capabilities")
    if in_pid_namespace:
        applied.append("pidns")
    device = torch.device("cuda" if gpu else "cpu")
    channel.send("ready", isolation=applied)

    def load(path: str, name: str):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    stage = "import"
    try:
        problem = load(request["problem_path"], "kernelrl_problem")
        candidate = load(request["candidate_path"], "kernelrl_candidate")
        model_cls = getattr(candidate, "ModelNew", None)
        if not isinstance(model_cls, type):
            raise TypeError("the candidate module defines no class ModelNew")
        channel.send("imported")

        stage = "init"
        sets = input_sets(problem)
        models: dict[str, object] = {}

        def model_for(set_name: str):
            # same sequence as the reference: seed, constructor args, seed, construct
            if set_name not in models:
                torch.manual_seed(42)
                init_inputs = call_with(problem.get_init_inputs, sets[set_name])
                torch.manual_seed(42)
                if gpu:
                    torch.cuda.manual_seed(42)
                models[set_name] = model_cls(*init_inputs).to(device)
            return models[set_name]

        model_for(request["trials"][0]["set"])
        channel.send("initialized")

        stage = "correctness"
        out_dir = request["out_dir"]
        for trial in request["trials"]:
            index = trial["index"]
            model = model_for(trial["set"])
            inputs, args = _load_args(request["in_dir"], trial, device, read_tensor)
            with torch.no_grad():
                outputs = _flatten_outputs(model(*args))
            if gpu:
                sync()
            metas = []
            for k, t in enumerate(outputs):
                meta = tensor_meta(t)
                meta["subclass"] = type(t) is not torch.Tensor
                metas.append(meta)
                if meta["dtype"] in ITEMSIZE:
                    write_tensor(os.path.join(out_dir, f"trial{index}_out{k}.bin"), t)
            for k, t in enumerate(inputs):
                write_tensor(os.path.join(out_dir, f"trial{index}_in{k}.bin"), t)
            channel.send("trial", index=index, outputs=metas)

        if gpu and request["timing"] and any(t["set"] == request["timing_set"] for t in request["trials"]):
            stage = "timing"
            timed = next(t for t in request["trials"] if t["set"] == request["timing_set"])
            model = model_for(timed["set"])
            _, args = _load_args(request["in_dir"], timed, device, read_tensor)

            def call():
                with torch.no_grad():
                    model(*args)

            raw = time_cuda(
                call, torch=torch, synchronize=sync, event_cls=event_cls, clock=_clock,
                settings=TimerSettings(**request["timer"]),
            )
            channel.send("timing", **raw)
    except SystemExit as exc:
        channel.send("exit", stage=stage, code=str(exc.code)[:200])
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - everything the candidate raises is reported, nothing escapes
        channel.send("error", **_error_fields(exc, stage))
        os._exit(0)
    channel.send("done")
    sys.stdout.flush()
    os._exit(0)  # skip atexit hooks and finalizers the candidate may have registered


if __name__ == "__main__":
    main(sys.argv)
