# The two commands: `make demo` and `make test`. Each sets up everything it
# needs (.venv, dependencies, code generation, build) on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BUILD := build
OPFORGE_CUDA ?= AUTO
JOBS ?= $(shell nproc)
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: all venv gen check build demo test bench clean sanitize-cuda gpu-deps

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

build: venv $(BUILD)/build.ninja
	$(VENV)/bin/cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(PY) -m opforge.demo

test: build
	$(PY) -m pytest -q

# The CUDA kernels, run by the CUDA simulator under TSan, then ASan + UBSan.
sanitize-cuda: build
	bash scripts/sanitize_cuda.sh

# The pure-Python build dependencies benchmarks/cuda.sh needs on a GPU machine
# that lacks them (carried there with the working tree).
gpu-deps: venv
	rm -rf .gpu-deps && mkdir -p .gpu-deps
	$(PY) -c "import jinja2, markupsafe, pybind11, yaml, shutil, pathlib; [shutil.copytree(pathlib.Path(m.__file__).parent, '.gpu-deps/' + m.__name__, ignore=shutil.ignore_patterns('*.so', '__pycache__')) for m in (jinja2, markupsafe, pybind11, yaml)]"

bench: build
	$(PY) benchmarks/overhead.py
	$(PY) benchmarks/codegen_speed.py

clean:
	rm -rf $(BUILD) opforge/_C*.so opforge/_ops.py opforge/_ops.pyi opforge/_build_config.py
