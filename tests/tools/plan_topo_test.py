#!/usr/bin/env python3
"""Tests of `grove plan --topo`: the report, its JSON, the drawings and the errors.

Why a script: the command's contract is its output as a user or a script reads it (JSON
fields, a Graphviz file, exit statuses and messages), so the tests run the built binary.
One CTest test per case: plan_topo_test.py GROVE CASE [WORKDIR]; exit 77 means skipped.
"""
import json
import os
import shutil
import subprocess
import sys

SKIP = 77


def run(grove, *args):
    return subprocess.run([grove, *args], capture_output=True, text=True, timeout=120)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def report(grove, *args):
    result = run(grove, "plan", *args, "--json")
    check(result.returncode == 0, f"exit {result.returncode}: {result.stderr}")
    return json.loads(result.stdout)


def case_broadcast_json(grove, workdir):
    """Packed trees lead on dgx1v:0,1,4 (no NVLink ring) and come close to λ."""
    data = report(grove, "broadcast", "--topo", "dgx1v:0,1,4", "--size", "64M")
    check(data["ranks"] == 3 and data["root"] == 0, data)
    check(data["bytes"] == 64 << 20 and data["count"] == 16 << 20, data)
    bound = data["bound"]
    check(bound["units"] == "1" and bound["exact"] and bound["gbps"] == 25.0, bound)
    candidates = data["candidates"]
    simulated = [c for c in candidates if c["simulated"]]
    times = [c["predicted_us"] for c in simulated]
    check(times == sorted(times), f"not sorted by predicted time: {times}")
    check(sum(c["chosen"] for c in candidates) == 1, "exactly one candidate is chosen")
    # "trees" is first, or tied with the first (on {0,1,4} its single tree 0→1, 0→2 is the
    # binomial tree, and ties list the chosen candidate first).
    trees = next(c for c in simulated if c["algorithm"] == "trees")
    check(trees["predicted_us"] <= times[0] * (1 + 1e-9), f"trees is not first: {candidates}")
    check(trees["structure"]["kind"] == "trees", trees)
    [tree] = trees["structure"]["trees"]
    check(tree["root"] == 0 and tree["paths"] == "0→1, 0→2", tree)
    check(tree["rate"]["units"] == "1" and tree["rate"]["gbps"] == 25.0, tree)
    check(abs(trees["ratio"] - trees["algbw_gbps"] / 25.0) < 1e-12, trees)
    check(trees["busbw_gbps"] == trees["algbw_gbps"], "broadcast busbw factor is 1")
    # dgx1v's ranks copy locally at the preset's device-memory rate (local_gbps), so the
    # root's own input-to-output copy hides behind the link: the tree runs at λ.
    check(trees["ratio"] > 0.95, f"trees at {trees['ratio']:.3f} of λ")
    # The ring needs the missing NVLink 1-4 (ranks 1-2 here): it cannot run at all.
    ring = [c for c in candidates if c["algorithm"] == "chain"]
    check(ring and not ring[0]["simulated"] and "no route" in ring[0]["problem"], ring)
    check(data["verifier"]["proven"], data["verifier"])
    check(data["verifier"]["in_place"]["ok"] and data["verifier"]["out_of_place"]["ok"], data)


def case_allreduce_json(grove, workdir):
    """All 8 GPUs of dgx1v: candidates sorted, ratios against the allreduce bound 24/7."""
    data = report(grove, "allreduce", "--topo", "dgx1v", "--size", "16M")
    check(data["ranks"] == 8 and data["root"] is None, data)
    check(data["bound"]["units"] == "24/7", data["bound"])
    simulated = [c for c in data["candidates"] if c["simulated"]]
    check(len(simulated) >= 2, data["candidates"])
    times = [c["predicted_us"] for c in simulated]
    check(times == sorted(times), times)
    for c in simulated:
        check(abs(c["busbw_gbps"] - c["algbw_gbps"] * 14 / 8) < 1e-9 * c["busbw_gbps"], c)
    chosen = [c for c in data["candidates"] if c["chosen"]]
    check(len(chosen) == 1 and data["verifier"]["proven"], data["verifier"])


def case_algo_forced(grove, workdir):
    """--algo keeps one candidate; one that does not apply is an error naming --algo."""
    data = report(grove, "broadcast", "--topo", "dgx1v:0,2,3", "--size", "1M", "--algo", "trees",
                  "--root", "2")
    check([c["algorithm"] for c in data["candidates"]] == ["trees"], data["candidates"])
    check(data["candidates"][0]["chosen"] and data["root"] == 2, data)
    total = sum(t["rate"]["units_value"] for t in data["candidates"][0]["structure"]["trees"])
    check(total == 3, f"λ(2) of dgx1v:0,2,3 is 3, trees carry {total}")
    result = run(grove, "plan", "allreduce", "--topo", "dgx1v:0,1,4", "--size", "1M", "--algo",
                 "onehop")
    check(result.returncode == 1 and "--algo" in result.stderr, result.stderr)


def case_text(grove, workdir):
    """The text report: header, bound, the chosen line marked, the verifier's verdict."""
    result = run(grove, "plan", "broadcast", "--topo", "dgx1v", "--size", "64M")
    check(result.returncode == 0, result.stderr)
    out = result.stdout
    check("from root 0 on dgx1v: 8 ranks, link unit 25 GB/s" in out, out)
    check("# bound: λ(0) = 6 link units = 150.00 GB/s" in out, out)
    check(any(line.startswith("* ") for line in out.splitlines()), out)
    check("tree 6 at 1 (25.00 GB/s): 0→" in out, out)
    check(out.count("): proven") == 2, out)


def case_dot(grove, workdir):
    """--dot: every rank a node, the links grey, the tree's edges in colour."""
    path = os.path.join(workdir, "plan_topo.dot")
    result = run(grove, "plan", "broadcast", "--topo", "dgx1v:0,1,4", "--size", "64M", "--algo",
                 "trees", "--dot", path)
    check(result.returncode == 0, result.stderr)
    text = open(path, encoding="utf-8").read()
    check(text.startswith("digraph"), text)
    for rank in range(3):
        check(f'"r{rank}" [label="{rank}"' in text, f"rank {rank} missing:\n{text}")
    check('"r0" -> "r1" [color=grey75' in text, text)
    check('"r0" -> "r2" [color="#' in text, f"no tree edge 0->2:\n{text}")
    check("tree: 1 × 25 = 25 GB/s" in text, text)


def case_dot_switch(grove, workdir):
    """Switch vertices are boxes; tree edges through them are dashed."""
    path = os.path.join(workdir, "plan_topo_switch.dot")
    result = run(grove, "plan", "allreduce", "--topo", "h100x8", "--size", "64M", "--dot", path)
    check(result.returncode == 0, result.stderr)
    text = open(path, encoding="utf-8").read()
    check("shape=box" in text, text)
    check(all(f'"r{rank}" [label="{rank}"' in text for rank in range(8)), text)


def case_svg(grove, workdir):
    """--svg runs Graphviz when it is there."""
    if shutil.which("dot") is None:
        print("dot (Debian package graphviz) is not installed: skipped")
        return SKIP
    path = os.path.join(workdir, "plan_topo.svg")
    result = run(grove, "plan", "broadcast", "--topo", "dgx1v", "--size", "64M", "--svg", path)
    check(result.returncode == 0, result.stderr)
    text = open(path, encoding="utf-8").read()
    check("<svg" in text and "</svg>" in text, text[:200])


def case_svg_without_dot(grove, workdir):
    """Without dot on PATH, --svg fails and says what to install."""
    env = dict(os.environ, PATH=workdir)
    result = subprocess.run([grove, "plan", "broadcast", "--topo", "mesh:3", "--size", "1K",
                             "--svg", os.path.join(workdir, "none.svg")],
                            capture_output=True, text=True, timeout=60, env=env)
    check(result.returncode == 1, result)
    check("--svg" in result.stderr and "graphviz" in result.stderr, result.stderr)


def case_bad_topo(grove, workdir):
    """A bad --topo: exit 1 and a message naming --topo."""
    for spec in ["nosuchpreset", "dgx1v:0,9", os.path.join(workdir, "missing.json")]:
        result = run(grove, "plan", "broadcast", "--topo", spec, "--size", "1M")
        check(result.returncode == 1, f"{spec}: exit {result.returncode}")
        check("--topo" in result.stderr and spec in result.stderr, result.stderr)


def case_bad_flags(grove, workdir):
    """Flags that need --topo, or that --topo excludes, are named."""
    cases = [
        (["plan", "broadcast", "--size", "1M"], "--size needs --topo"),
        (["plan", "broadcast", "--json"], "--json needs --topo"),
        (["plan", "broadcast", "--topo", "dgx1v"], "--topo needs --size"),
        (["plan", "broadcast", "--topo", "dgx1v", "--size", "12X"], "--size '12X'"),
        (["plan", "broadcast", "--topo", "dgx1v", "--size", "1M", "-n", "4"], "--nranks 4"),
        (["plan", "broadcast", "--topo", "dgx1v:0,1", "--size", "1M", "-r", "2"], "--root 2"),
    ]
    for args, expected in cases:
        result = run(grove, *args)
        check(result.returncode == 1, f"{args}: exit {result.returncode}")
        check(expected in result.stderr, f"{args}: {result.stderr}")


def case_compress(grove, workdir):
    """--compress RATIO:GBPS models compressed network links: with a free codec (a rate far
    above the wire's) a 1 Gbit/s pair's allreduce is predicted RATIO times faster than
    uncompressed, shown as the gain; shared-memory links do not compress; bad values are
    named."""
    args = ("allreduce", "--topo", "cluster:2x1:1", "--size", "16M", "-d", "bfloat16",
            "--peer-memory", "0")
    data = report(grove, *args, "--compress", "2:100000")
    chosen = [c for c in data["candidates"] if c.get("chosen")][0]
    gain = chosen["uncompressed_us"] / chosen["predicted_us"]
    check(1.95 < gain <= 2.0, f"gain {gain}: {chosen}")
    text = run(grove, "plan", *args, "--compress", "1.5:1000").stdout
    check("messages over network links carry 1/1.5 of their bytes" in text, text)
    check("uncompressed" in text and "gain" in text, text)
    one_host = report(grove, "allreduce", "--topo", "cluster:1x2", "--size", "16M",
                      "--peer-memory", "0", "--compress", "2:100000")
    for c in one_host["candidates"]:
        if "uncompressed_us" in c:
            check(abs(c["uncompressed_us"] - c["predicted_us"]) < 1e-6, f"one host: {c}")
    for bad in ["0.5", "x", "1.5:", "1.5:-1", "100"]:
        result = run(grove, "plan", *args, "--compress", bad)
        check(result.returncode == 1 and f"--compress '{bad}'" in result.stderr,
              f"{bad}: {result.returncode} {result.stderr}")
    result = run(grove, "plan", "allreduce", "--compress", "1.5")
    check(result.returncode == 1 and "--compress needs --topo" in result.stderr, result.stderr)


def case_cpus(grove, workdir):
    """--cpus N | host:N models shared CPUs: a rank alone on its host's CPU codes as fast as
    with no CPUs modelled; two ranks on one CPU code at half the rate, so the compressed call
    (the codec slower than the wire) takes longer; bad values are named."""
    args = ("allreduce", "--topo", "cluster:2x1:1", "--size", "16M", "-d", "bfloat16",
            "--peer-memory", "0", "--algo", "ring", "--compress", "1.5:0.2")
    alone = report(grove, *args)["candidates"][0]
    per_host = report(grove, *args, "--cpus", "host:1")
    check(per_host["cpus"] == "1 CPU on each of 2 hosts, shared by its ranks", per_host)
    check(abs(per_host["candidates"][0]["predicted_us"] - alone["predicted_us"]) < 1e-6,
          f"{per_host['candidates'][0]} against {alone}")
    shared = report(grove, *args, "--cpus", "1")
    check(shared["cpus"] == "the 2 ranks share 1 CPU", shared)
    check(shared["candidates"][0]["predicted_us"] > 1.2 * alone["predicted_us"],
          f"{shared['candidates'][0]} against {alone}")
    text = run(grove, "plan", *args, "--cpus", "2").stdout
    check("# CPUs (--cpus): the 2 ranks share 2 CPUs;" in text, text)
    for bad in ["0", "x", "host:", "host:0", "5000", "-1"]:
        result = run(grove, "plan", *args, "--cpus", bad)
        check(result.returncode == 1 and f"--cpus '{bad}'" in result.stderr,
              f"{bad}: {result.returncode} {result.stderr}")
    result = run(grove, "plan", "allreduce", "--cpus", "2")
    check(result.returncode == 1 and "--cpus needs --topo" in result.stderr, result.stderr)


def case_small_sizes(grove, workdir):
    """Sizes 0, 1 element and non-divisible sizes still give a proven plan."""
    for collective, size in [("allreduce", "0"), ("broadcast", "4"), ("allgather", "1000"),
                             ("reducescatter", "12"), ("reduce", "7")]:
        data = report(grove, collective, "--topo", "dgx1v:0,3,4,7", "--size", size)
        check(data["verifier"]["proven"], f"{collective} {size}: {data['verifier']}")
    data = report(grove, "allgather", "--topo", "dgx1v:0,3,4,7", "--size", "1000")
    check(data["count"] == 62 and data["bytes"] == 992, data)  # 4 blocks of 62 floats


def case_without_topo(grove, workdir):
    """Without --topo, `grove plan` is what it was."""
    result = run(grove, "plan", "allreduce", "-n", "3", "-c", "7")
    check(result.returncode == 0, result.stderr)
    check(result.stdout.startswith("# allreduce of 7 float elements on 3 ranks"), result.stdout)
    check("plan allreduce" in result.stdout and result.stdout.count(": proven") == 2,
          result.stdout)


def main():
    grove, name = sys.argv[1], sys.argv[2]
    workdir = sys.argv[3] if len(sys.argv) > 3 else os.getcwd()
    os.makedirs(workdir, exist_ok=True)
    status = globals()["case_" + name](grove, workdir)
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
