# Thin entry points over CMake presets (CMakePresets.json), so that a fresh machine goes from
# clone to a tested build with one command, and CI runs exactly what developers run.
# All real build logic lives in CMake; see docs/building.md.
#
#   make                  install missing packages, configure and build the release preset
#   make run              build, then `grove perf allreduce` on 4 processes (grove run, shm)
#   make test             format check, release build + all tests, the PyTorch backend's
#                         suite (test-torch), then ASan/UBSan build + all tests, then TSan
#                         build + the multi-threaded tests (names matching TSAN_TESTS), then
#                         the fuzzers for FUZZ_SECONDS each
#   make test-release | test-torch | test-asan | test-tsan | test-fuzz   one stage of it
#   make torch            the PyTorch backend (python/, import grove_torch) built in place
#                         against the pinned torch in build/venv, made on first use
#   make debug            build the debug preset (build-debug/)
#   make format           clang-format the sources in place;  make format-check: only check
#   make install PREFIX=DIR                      install the release build under DIR
#   make package          a .tar.gz of the installed tree (CPack)
#   make clean            remove the preset build directories
#
# Variables: JOBS (parallel compile jobs, default 2), PREFIX (default /usr/local),
# TSAN_TESTS (ctest -R regex of the tests run under TSan), TSAN_TARGETS (what the TSan stage
# builds: by default only the test executables whose sources mention a TSAN_TESTS name),
# FUZZ_SECONDS (how long test-fuzz runs each libFuzzer target, default 30).

JOBS ?= 2
PREFIX ?= /usr/local
TSAN_TESTS ?= Multirank|Threads|Concurrent|TcpRails
# Building only these keeps the TSan stage short; tests of executables not built show up in
# ctest as NAME_NOT_BUILT, which the -R filter leaves out. Empty = build everything.
TSAN_TARGETS ?= $(basename $(notdir $(shell grep -lE '$(TSAN_TESTS)' \
                  tests/unit/*_test.cpp tests/multirank/*_test.cpp 2>/dev/null)))
FUZZ_SECONDS ?= 30
CMAKE ?= cmake
CTEST ?= ctest
# The PyTorch backend's virtual environment (torch pinned in python/requirements.txt).
VENV ?= build/venv

# ccache (used when installed, see CMakeLists.txt): paths under this tree are hashed relative
# to it and the build directory is left out of the hash, so a fresh clone elsewhere reuses
# what another clone compiled; room for the four presets (ASan objects carry debug info).
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1
export CCACHE_MAXSIZE ?= 16G

# The stages share two cores and each cmake --build is already parallel: run them in order.
.NOTPARALLEL:
.DEFAULT_GOAL := all
.PHONY: all deps build run debug test test-release test-asan test-tsan test-fuzz format format-check \
        install package clean torch test-torch

# `make` also builds the PyTorch backend when its environment exists (after make torch or
# make test); creating it downloads torch, so only those two targets do.
all: deps build
	@if [ -x $(VENV)/bin/python ]; then $(MAKE) --no-print-directory torch; fi

deps:
	@scripts/install-deps.sh

build: deps
	$(CMAKE) --preset release
	$(CMAKE) --build --preset release -j$(JOBS)

run: build
	./build/bin/grove run -n 4 -- ./build/bin/grove perf allreduce -b 8 -e 64M -f 4

debug: deps
	$(CMAKE) --preset debug
	$(CMAKE) --build --preset debug -j$(JOBS)

test: deps format-check test-release test-torch test-asan test-tsan test-fuzz
	@echo "make test: release, torch, asan, tsan and fuzz stages passed"

test-release: build
	$(CTEST) --preset release

# The environment is rebuilt when the pins change (the stamp records which were installed).
$(VENV)/.installed: python/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r python/requirements.txt
	cp python/requirements.txt $@

# Built in place (python/grove_torch/_C*.so) against build/lib/libgrove.a; ccache (its
# compiler links under /usr/lib/ccache) speeds the rebuilds of a fresh clone.
torch: build $(VENV)/.installed
	cd python && CXX=$$(test -x /usr/lib/ccache/c++ && echo /usr/lib/ccache/c++ || echo c++) \
	  MAX_JOBS=$(JOBS) ../$(VENV)/bin/python setup.py --quiet build_ext --inplace

test-torch: torch
	PYTHONPATH=python $(VENV)/bin/python -m pytest -q tests/torch

test-asan: deps
	$(CMAKE) --preset asan
	$(CMAKE) --build --preset asan -j$(JOBS)
	$(CTEST) --preset asan

test-tsan: deps
	$(CMAKE) --preset tsan
	$(CMAKE) --build --preset tsan -j$(JOBS) $(if $(strip $(TSAN_TARGETS)),--target $(TSAN_TARGETS))
	$(CTEST) --preset tsan -R '$(TSAN_TESTS)'

# Each fuzzer starts from its seeds in fuzz/corpus/NAME (read only) plus what earlier runs
# found (build-fuzz/corpus/NAME); a crash leaves its input in build-fuzz/artifacts/ and fails
# the stage. Reproduce one with: build-fuzz/bin/NAME build-fuzz/artifacts/NAME-crash-...
test-fuzz: deps
	$(CMAKE) --preset fuzz
	$(CMAKE) --build --preset fuzz -j$(JOBS)
	@mkdir -p build-fuzz/artifacts
	@set -e; for seeds in fuzz/corpus/*/; do \
	  name=$$(basename $$seeds); \
	  if [ ! -x build-fuzz/bin/$$name ]; then echo "test-fuzz: $$name not built, skipped"; continue; fi; \
	  mkdir -p build-fuzz/corpus/$$name; \
	  echo "test-fuzz: $$name for $(FUZZ_SECONDS) s"; \
	  build-fuzz/bin/$$name -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/$$name- \
	    build-fuzz/corpus/$$name $$seeds 2>build-fuzz/$$name.log \
	    || { tail -n 60 build-fuzz/$$name.log; echo "test-fuzz: $$name FAILED"; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|^Done' build-fuzz/$$name.log || true; \
	done

format:
	@scripts/format.sh

format-check:
	@scripts/format.sh --check

install: build
	$(CMAKE) --install build --prefix '$(PREFIX)'

package: build
	$(CMAKE) --build --preset release --target package

clean:
	rm -rf build build-debug build-asan build-tsan build-fuzz
