# trnc — top-level driver. `make demo` and `make test` install whatever is
# missing (Debian packages, .venv with torch 2.13.0, the trnc package) first.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
JOBS   ?= $(shell nproc)

APT_PACKAGES := build-essential pkg-config protobuf-c-compiler libprotobuf-c-dev \
                protobuf-compiler libxxhash-dev libcmocka-dev llvm-16-dev clang-16 \
                libclang-rt-16-dev python3-venv redis-server
PY_PACKAGES  := torch==2.13.0 "protobuf>=4.21" numpy pytest hypothesis==6.170.15 tqdm \
                "scikit-build-core>=0.10" cmake ninja matplotlib transformers==5.23.0 redis==8.1.0 \
                expecttest==0.3.0

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SRC_STAMP := $(VENV)/.trnc-installed

.PHONY: all deps venv install build-c test test-c test-sanitize test-fuzz test-py test-long fuzz-shapes op-sweep opinfo models demo docs clean

all: install

# Debian packages: install only what dpkg does not already report installed.
deps: .deps-stamp
.deps-stamp: Makefile
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "trnc: installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@touch $@

venv: $(VENV)/.deps-installed
$(VENV)/.deps-installed: Makefile | .deps-stamp
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(PY_PACKAGES)
	@touch $@

# The package (C library + CPython extension + generated fx_pb2) built by
# scikit-build-core from pyproject.toml. Reinstalled when any source changes.
SOURCES := $(shell find include frontend ir passes codegen cache runtime python -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.def' -o -name '*.proto' -o -name '*.py' \) 2>/dev/null) \
           CMakeLists.txt pyproject.toml
install: $(SRC_STAMP)
$(SRC_STAMP): $(VENV)/.deps-installed $(SOURCES)
	$(PIP) install -q --no-build-isolation --no-deps .
	@touch $@

# C unit tests under ASan + UBSan (cmocka through ctest).
test-sanitize: .deps-stamp $(VENV)/.deps-installed
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH cmake -S . -B build/sanitize -G Ninja \
	  -DCMAKE_BUILD_TYPE=Debug -DTRNC_SANITIZE=ON -DTRNC_TESTS=ON
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH cmake --build build/sanitize -j $(JOBS)
	cd build/sanitize && PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

# libFuzzer target for the deserializer (clang-16), run briefly over the goldens.
FUZZ_SECONDS ?= 30
test-fuzz: .deps-stamp $(VENV)/.deps-installed
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH cmake -S . -B build/fuzz -G Ninja \
	  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_BUILD_TYPE=Debug -DTRNC_FUZZ=ON
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH cmake --build build/fuzz -j $(JOBS) --target trnc_fuzz_import
	mkdir -p build/fuzz/corpus && cp tests/golden/*.pb build/fuzz/corpus/
	build/fuzz/trnc_fuzz_import -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	  -rss_limit_mb=2048 build/fuzz/corpus 2>&1 | tail -n 5

# pytest, with the shape fuzzer (tests/python/test_shape_fuzz.py) in its
# bounded, derandomized "ci" profile, and the model suite (tests/models:
# Hugging Face transformers from tiny random configs, no downloads). Run as
# five pytest processes: one process over the whole suite grew past 23 GiB
# (dynamo's and trnc's per-process caches of ~3,700 compiled graphs), more
# than the CI machine has.
PY_TEST_GROUPS := "tests/python/test_[a-k]*.py" "tests/python/test_[l-n]*.py" \
                  "tests/python/test_o*.py" "tests/python/test_[p-z]*.py" tests/models
test-py: install
	@rc=0; for grp in $(PY_TEST_GROUPS); do \
	  echo "== pytest $$grp"; \
	  TRNC_FUZZ_PROFILE=ci $(VENV)/bin/pytest -q $$grp || rc=1; \
	done; exit $$rc

# The shape fuzzer alone, long and with a random seed: FUZZ_EXAMPLES examples
# per family budget unit (TRNC_FUZZ_EXAMPLES); FUZZ_ARGS=-x stops at the first
# family that fails; FUZZ_KEEP_GOING=1 logs every failing example's repro to
# build/fuzz-shapes-failures.txt and goes on; FUZZ_SIZES=big draws the
# largest sizes (up to 2^21 elements) four times as often. No captured logs
# (torch's DEBUG trace would bury the repro). Not part of `make test`.
FUZZ_EXAMPLES ?= 300
FUZZ_KEEP_GOING ?= 0
FUZZ_SIZES ?=
FUZZ_ARGS ?=
fuzz-shapes: install
	TRNC_FUZZ_PROFILE=long TRNC_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	  TRNC_FUZZ_KEEP_GOING=$(FUZZ_KEEP_GOING) TRNC_FUZZ_SIZES=$(FUZZ_SIZES) \
	  $(VENV)/bin/pytest -q -p no:cacheprovider -p no:logging tests/python/test_shape_fuzz.py $(FUZZ_ARGS)

# Every sample of the op sweep (tests/python/test_op_sweep.py), one compile
# each, with empty tensors; `make test` runs a fixed subset of it.
# OP_SWEEP_ARGS="-k aten.add" for one op, "-x" to stop at the first failure.
OP_SWEEP_ARGS ?=
op-sweep: install
	TRNC_OP_SWEEP=full $(VENV)/bin/pytest -q tests/python/test_op_sweep.py $(OP_SWEEP_ARGS)

# PyTorch's OpInfo database (tests/python/test_opinfo.py) in full: every
# op_db entry's first float32 sample, forward and input gradients, in
# OPINFO_SHARDS pytest processes (one per core by default; entry i runs in
# shard i mod OPINFO_SHARDS). Each shard reports to build/opinfo-N.jsonl;
# the summary (entries reaching trnc, pass rates, most refused ops) follows.
# `make test` runs every 12th entry. OPINFO_ARGS="-k cumsum" for one entry.
OPINFO_SHARDS ?= $(JOBS)
OPINFO_ARGS ?=
opinfo: install
	@mkdir -p build && rm -f build/opinfo-*.jsonl build/opinfo-*.log
	@pids=""; for i in $$(seq 0 $$(($(OPINFO_SHARDS) - 1))); do \
	  TRNC_OPINFO=full TRNC_OPINFO_SHARD=$$i/$(OPINFO_SHARDS) TRNC_OPINFO_REPORT=build/opinfo-$$i.jsonl \
	    $(VENV)/bin/pytest -q -p no:cacheprovider tests/python/test_opinfo.py $(OPINFO_ARGS) \
	    > build/opinfo-$$i.log 2>&1 & pids="$$pids $$!"; \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; \
	tail -n 3 build/opinfo-*.log; \
	$(PY) tests/python/opinfo_report.py build/opinfo-*.jsonl; exit $$rc

# The model suite in full: every architecture of tests/models/zoo.py trained
# one step and run in inference, each with its default and with eager
# attention (`make test` trains every default and three eager ones, and
# runs four defaults in inference).
models: install
	TRNC_MODEL_SUITE=full $(VENV)/bin/pytest -q tests/models

test-c: test-sanitize

# The Python tests marked `long` (the rest of the size and dtype cross products
# whose representative cases `make test` runs: tile, partition and chunk
# boundaries in every dtype and mode), alone. About 10 minutes on 2 cores.
test-long: install
	TRNC_TESTS=long $(VENV)/bin/pytest -q -m long tests/python tests/models

test: test-sanitize test-fuzz test-py

demo: install
	$(PY) -m trnc.demo

docs: install
	$(VENV)/bin/trnc ops --markdown > docs/operators.md

clean:
	rm -rf build _skbuild dist *.egg-info

# Benchmarks (bench/run.py): trnc vs TorchInductor (CPU) vs eager, side by side
# in one run; writes bench/results.md, bench/results.json and bench/ratios.png.
# Not part of `make test`: nothing asserts a time. About 15 minutes on 2 cores;
# BENCH_ARGS="--quick" for one repetition of everything, "--entries mlp,cnn" for a subset.
.PHONY: bench
BENCH_ARGS ?=
bench: install
	$(PY) bench/run.py $(BENCH_ARGS)

# A Llama-style decoder block training step at realistic size (width 2048,
# sequence 2048, bf16 autocast), compiled only and costed on trn2: kernels,
# instructions, C compile time, estimated time, model-FLOP utilization and the
# kernels that dominate; writes bench/llama-results.md and .json. Several
# minutes (the C compile of two large programs); LLAMA_ARGS="--size small" for
# the test's size, "--autocast-bf16" to add trnc's autocast_bf16 option
# (bench/llama-results-autocast-bf16.md).
.PHONY: bench-llama
LLAMA_ARGS ?=
bench-llama: install
	$(PY) bench/llama.py $(LLAMA_ARGS)
