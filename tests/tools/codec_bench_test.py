#!/usr/bin/env python3
"""Tests of grove_codec_bench (bench/compression's C++ half): its lines as bench/compression
parses them, the per-message mode (-m) and its errors.

Why a script: the benchmark's contract is its tab-separated output and its exit status, and
it checks every decode bit for bit itself (a mismatch exits 1), so running it on known data
tests the codec on the whole-tensor and the per-message paths the collectives take.
    codec_bench_test.py GROVE_CODEC_BENCH WORKDIR
"""
import os
import random
import struct
import subprocess
import sys


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def run(bench, *args):
    return subprocess.run([bench, *args], capture_output=True, text=True, timeout=300)


def main():
    bench, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = random.Random(7)
    # 10000 Gaussian float32 values: 40000 bytes, not a multiple of any message size below.
    gaussian = os.path.join(work, "gaussian.f32")
    with open(gaussian, "wb") as f:
        f.write(struct.pack("<10000f", *[rng.gauss(0, 0.01) for _ in range(10000)]))
    # 3001 random bytes as bfloat16: 1500 elements (the odd byte is dropped), incompressible.
    noise = os.path.join(work, "noise.bf16")
    with open(noise, "wb") as f:
        f.write(bytes(rng.randrange(256) for _ in range(3001)))

    result = run(bench, "-g", "-r", "3", "-m", "4096", "-m", "3000", "-m", "1",
                 f"g={gaussian}:float32", f"n={noise}:bfloat16")
    check(result.returncode == 0, f"exit {result.returncode}: {result.stderr}")
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    codec = {l[1]: l for l in lines if l[0] == "codec"}
    messages = [(l[1], int(l[3]), int(l[4]), float(l[5])) for l in lines if l[0] == "message"]
    check(sorted(codec) == ["g", "n"], f"codec lines: {sorted(codec)}")
    check(codec["g"][2:4] == ["float32", "40000"], f"g: {codec['g']}")
    check(codec["n"][2:4] == ["bfloat16", "3000"], f"n: {codec['n']}")
    check(len(codec["g"]) == 9, f"codec line has {len(codec['g'])} fields, expected 9")
    # Gaussian floats shrink (their exponent bytes); random bits do not.
    check(float(codec["g"][4]) > 1.1, f"gaussian ratio {codec['g'][4]}")
    check(float(codec["n"][4]) < 1.0, f"noise ratio {codec['n'][4]}")
    # Messages: whole elements each, the last one shorter. 4096 B = 1024 floats -> 10
    # messages; 3000 B = 750 floats -> 14; 1 B -> one element per message.
    check([m[:3] for m in messages] == [("g", 4096, 10), ("g", 3000, 14), ("g", 1, 10000),
                                        ("n", 4096, 1), ("n", 3000, 1), ("n", 1, 1500)],
          f"message lines: {messages}")
    # Each message pays its own frame header: smaller messages never shrink more.
    check(messages[0][3] >= messages[1][3] >= messages[2][3], f"ratios: {messages}")
    check(messages[2][3] < 1.0, f"one float per message cannot shrink: {messages[2]}")

    bad = run(bench, "-m", "0", f"g={gaussian}:float32")
    check(bad.returncode == 1 and "-m needs a message size" in bad.stderr,
          f"-m 0: exit {bad.returncode}, {bad.stderr!r}")
    print("codec_bench_test: ok")


if __name__ == "__main__":
    main()
