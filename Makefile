# The two commands a newcomer runs:  make run  and  make test.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# --system-site-packages lets a machine's preinstalled CuPy (GPU images) be seen; there
# the ci extra (cupy-cuda13x, to compile-check the kernels without a GPU) is left out, as
# it would shadow that CuPy, which may be built for another CUDA.
EXTRAS ?= test$(shell $(PYTHON) -c "import cupy" 2> /dev/null || echo ",ci")
STAMP  := $(VENV)/.installed-$(shell echo "$(EXTRAS)" | cat pyproject.toml - | cksum | cut -d' ' -f1)

.PHONY: help run test test-gpu bench clean venv

help:
	@echo "make run       create .venv and run the N-gram release on the bundled MSNBC data"
	@echo "make test      create .venv and run the test suite (what CI runs)"
	@echo "make test-gpu  the tests marked gpu (where CuPy sees a GPU)"
	@echo "make bench     loading and n-gram counting against naive Python"
	@echo "make venv      only create or update .venv (EXTRAS=test,ci by default without CuPy)"
	@echo "make clean     remove .venv, build files and demo-release/"

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	rm -f $(VENV)/.installed-*
	touch $@

run: venv
	$(VENV)/bin/dpgpu demo --out demo-release --force

test: venv
	$(PY) -m pytest -q

test-gpu: venv
	$(PY) -m pytest -q -m gpu

bench: venv
	$(PY) bench/bench_grams.py

clean:
	rm -rf $(VENV) build *.egg-info demo-release
