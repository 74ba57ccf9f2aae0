# The two commands: `make demo` and `make test`. Each sets up everything it
# needs (.venv, dependencies, code generation, build) on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BUILD := build
OPFORGE_CUDA ?= AUTO
JOBS ?= $(shell nproc)
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: all venv gen check build demo test bench fuzz leaks clean sanitize sanitize-cuda gpu-deps

all: build

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	# The checkout itself is on the venv's path: `import opforge` / `codegen` work from anywhere.
	$(PY) -c "import site, pathlib; pathlib.Path(site.getsitepackages()[0], 'opforge-checkout.pth').write_text('$(CURDIR)\n')"
	touch $@

venv: $(VENV)/.installed

gen: venv
	$(PY) -m codegen gen

check: venv
	$(PY) -m codegen check

$(BUILD)/build.ninja: | $(VENV)/.installed
	$(VENV)/bin/cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV))/bin/ninja \
	  -DPython_EXECUTABLE=$(abspath $(PY)) -DOPFORGE_CUDA=$(OPFORGE_CUDA)

# OPFORGE_CUDA given on the command line also switches an existing build.
build: venv $(BUILD)/build.ninja
ifeq ($(origin OPFORGE_CUDA),command line)
	$(VENV)/bin/cmake -S . -B $(BUILD) -DOPFORGE_CUDA=$(OPFORGE_CUDA) > /dev/null
endif
	$(VENV)/bin/cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(PY) -m opforge.demo

# The whole suite with the CPU kernels the machine selects, then the reference
# comparisons and the kernel families' tests under every other compiled
# capability (Note [CPU capabilities]).
# pytest-xdist spreads the tests over the cores; the 15 slowest are listed at
# the end. The simulated CUDA suite runs on its own, in one process and in
# order: its coverage tests, last, count the kernels that process launched.
PYTEST_PARALLEL ?= -n $(JOBS) --dist loadgroup
test: build
	$(PY) -m pytest -q $(PYTEST_PARALLEL) --durations=15 --ignore=tests/cuda_sim
	$(PY) -m pytest -q -p no:xdist tests/cuda_sim
	@for c in $$($(PY) -c "import opforge; i = opforge.build_info(); print(*[c for c in i['cpu_capabilities'] if c != i['cpu_capability']])"); do \
	  echo "OPFORGE_CPU_CAPABILITY=$$c"; \
	  OPFORGE_CPU_CAPABILITY=$$c $(PY) -m pytest -q $(PYTEST_PARALLEL) tests/ops/test_ops.py::test_matches_reference \
	    tests/ops/test_pointwise.py tests/ops/test_variants.py tests/ops/test_conv.py \
	    tests/ops/test_pooling.py tests/ops/test_norm.py tests/ops/test_layers.py || exit 1; \
	done

# The CPU suite, then the simulated CUDA kernels, with opforge's C++ built under
# ASan + UBSan (a scratch clone of HEAD); SANITIZE_ARGS=--ci runs CI's selection.
sanitize: venv
	bash scripts/sanitize.sh $(SANITIZE_ARGS)

# The CUDA kernels, run by the CUDA simulator under TSan, then ASan + UBSan (CI runs
# the TSan stage alone: `make sanitize` covers the other).
CUDA_SANITIZERS ?= thread address,undefined
sanitize-cuda: build
	bash scripts/sanitize_cuda.sh $(CUDA_SANITIZERS)

# The pure-Python build dependencies benchmarks/cuda.sh needs on a GPU machine
# that lacks them (carried there with the working tree).
gpu-deps: venv
	rm -rf .gpu-deps && mkdir -p .gpu-deps
	$(PY) -c "import jinja2, markupsafe, pybind11, yaml, shutil, pathlib; [shutil.copytree(pathlib.Path(m.__file__).parent, '.gpu-deps/' + m.__name__, ignore=shutil.ignore_patterns('*.so', '__pycache__')) for m in (jinja2, markupsafe, pybind11, yaml)]"

bench: build
	$(PY) benchmarks/ops.py --budget 0.15
	$(PY) benchmarks/overhead.py
	$(PY) benchmarks/codegen_speed.py
	$(PY) benchmarks/models.py

# The property-based fuzzing of tests/ops/test_fuzz.py at length: random (not derandomized)
# examples, OPFORGE_FUZZ_EXAMPLES per test (`make test` runs a few, reproducibly).
fuzz: build
	OPFORGE_FUZZ_EXAMPLES=500 $(PY) -m pytest -q -p no:xdist tests/ops/test_fuzz.py

# The leak check: 1e5 forward+backward calls per op family, printing each family's RSS growth.
leaks: build
	$(PY) benchmarks/leaks.py

clean:
	rm -rf $(BUILD) opforge/_C*.so opforge/_ops.py opforge/_ops.pyi opforge/_build_config.py
