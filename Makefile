# Thin entry points over CMake presets (CMakePresets.json), so that a fresh machine goes from
# clone to a tested build with one command, and CI runs exactly what developers run.
# All real build logic lives in CMake; see docs/building.md.
#
#   make                  install missing packages, configure and build the release preset
#   make run              build, then `grove perf allreduce` on 4 processes (grove run, shm)
#   make test             format check, release build + all tests, then ASan/UBSan build +
#                         all tests, then TSan build + the multi-threaded tests (names
#                         matching TSAN_TESTS)
#   make test-release | test-asan | test-tsan    one stage of `make test`
#   make debug            build the debug preset (build-debug/)
#   make format           clang-format the sources in place;  make format-check: only check
#   make install PREFIX=DIR                      install the release build under DIR
#   make package          a .tar.gz of the installed tree (CPack)
#   make clean            remove the preset build directories
#
# Variables: JOBS (parallel compile jobs, default 2), PREFIX (default /usr/local),
# TSAN_TESTS (ctest -R regex of the tests run under TSan), TSAN_TARGETS (what the TSan stage
# builds: by default only the test executables whose sources mention a TSAN_TESTS name).

JOBS ?= 2
PREFIX ?= /usr/local
TSAN_TESTS ?= Multirank|Threads|Concurrent
# Building only these keeps the TSan stage short; tests of executables not built show up in
# ctest as NAME_NOT_BUILT, which the -R filter leaves out. Empty = build everything.
TSAN_TARGETS ?= $(basename $(notdir $(shell grep -lE '$(TSAN_TESTS)' \
                  tests/unit/*_test.cpp tests/multirank/*_test.cpp 2>/dev/null)))
CMAKE ?= cmake
CTEST ?= ctest

# The stages share two cores and each cmake --build is already parallel: run them in order.
.NOTPARALLEL:
.DEFAULT_GOAL := all
.PHONY: all deps build run debug test test-release test-asan test-tsan format format-check \
        install package clean

all: deps build

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

test: deps format-check test-release test-asan test-tsan
	@echo "make test: release, asan and tsan stages passed"

test-release: build
	$(CTEST) --preset release

test-asan: deps
	$(CMAKE) --preset asan
	$(CMAKE) --build --preset asan -j$(JOBS)
	$(CTEST) --preset asan

test-tsan: deps
	$(CMAKE) --preset tsan
	$(CMAKE) --build --preset tsan -j$(JOBS) $(if $(strip $(TSAN_TARGETS)),--target $(TSAN_TARGETS))
	$(CTEST) --preset tsan -R '$(TSAN_TESTS)'

format:
	@scripts/format.sh

format-check:
	@scripts/format.sh --check

install: build
	$(CMAKE) --install build --prefix '$(PREFIX)'

package: build
	$(CMAKE) --build --preset release --target package

clean:
	rm -rf build build-debug build-asan build-tsan
