#!/usr/bin/env python3
"""Multi-process tests of grove: ranks that are processes, started the ways users start them.

Why a script: what is under test is processes — a launcher's environment variables, the
rendezvous store served by rank 0, shared memory between address spaces, TCP, exit statuses,
and what is left behind in /dev/shm and the process table — so each case starts real
processes of process_check (or `grove perf`) and watches them from the outside. Each case is
one CTest test; its TIMEOUT and GROVE_TIMEOUT are the only clocks (nothing here asserts how long
anything took). Exit status 0 = pass, 1 = fail, 77 = skipped.

Every process a case starts carries GROVE_PROC_TEST_MARKER=<unique> in its environment; after
the case, no process with that marker may remain (those found are killed: they are ours), and
no /dev/shm/grove-<job>-* entry of the case's job may remain.

Usage:
  process_test.py --grove GROVE --check PROCESS_CHECK CASE ARGS...
    check N [--tcp [--direct-bytes B] [--per-direction]]
                              grove run -n N -- process_check; B: GROVE_TCP_DIRECT_BYTES
                              (0: every frame on the network thread; large: every frame on
                              the waiting rank's thread); --per-direction: GROVE_TCP_SHARED=0
                              (a connection per direction instead of one per pair)
    compressed N [--corrupt]  grove run -n N -- process_check compressed over TCP with
                              GROVE_COMPRESS=on (--corrupt: a flipped bit under GROVE_CHECKSUM)
    registered N [--default] [--copies] [--tcp] [--expect-direct]
                              grove run -n N -- process_check registered, with
                              GROVE_DIRECT_MIN_BYTES=1 (--default: unset) and GROVE_TRACE;
                              --copies: GROVE_DIRECT=2; --expect-direct: the traces must
                              show the direct path (every non-empty call with --copies;
                              some call without)
    perf N COLLECTIVE FLAGS   grove run -n N -- grove perf COLLECTIVE -t 1 ... FLAGS
    launcher NAME N           N processes with NAME's variables (torchrun openmpi mpich slurm)
    mpirun NAME N             the real mpirun.openmpi / mpirun.mpich, skipped if not installed
    bad CASE                  wrong_secret missing_rank duplicate_rank world_size_mismatch
                              port_in_use
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

from process_support import (JOB, OK_LINE, SKIP, base_env, check_leftovers, error_line,
                             expect_failures, expect_ok, fail, failures, free_port, grove_env,
                             launch_by_hand, run_process_check, show, tools)

# ---- cases ------------------------------------------------------------------------------------


def case_check(args):
    n = int(args[0])
    tcp = "--tcp" in args[1:]
    extra = {"GROVE_TRANSPORT": "tcp"} if tcp else {}
    if "--direct-bytes" in args[1:]:
        extra["GROVE_TCP_DIRECT_BYTES"] = args[args.index("--direct-bytes") + 1]
    if "--per-direction" in args[1:]:
        extra["GROVE_TCP_SHARED"] = "0"
    env = base_env(extra or None)
    _, jobs = run_process_check(n, env, tcp)
    check_leftovers(jobs)


# GROVE_DEBUG=INFO's summary of what a rank's link codec did (core/link_compression.cpp).
CODEC_STATS = re.compile(r"\[(\d+)\] GROVE INFO compression: (\d+) messages sent compressed "
                         r"\((\d+) -> (\d+) bytes.*?\), (\d+) tried and sent raw, (\d+) passed "
                         r"on compressed, (\d+) decoded")


def case_compressed(args):
    """process_check compressed over TCP with GROVE_COMPRESS=on: exact results, and every
    rank's log shows messages compressed, tried raw (random bits), decoded and (3 ranks and
    more: rings pass blocks on) forwarded still compressed. --corrupt: a flipped bit in a
    frame (GROVE_FAULT_CORRUPT_FRAME) under GROVE_CHECKSUM=1 fails the job naming the link
    and the compressed message, never a wrong value."""
    n = int(args[0])
    env = base_env({"GROVE_TRANSPORT": "tcp", "GROVE_COMPRESS": "on", "GROVE_DEBUG": "INFO"})
    if "--corrupt" in args[1:]:
        # Frame 40 of each connection: well inside the first float32 allReduce's messages.
        env.update({"GROVE_CHECKSUM": "1", "GROVE_FAULT_CORRUPT_FRAME": "40"})
        argv = [tools.grove, "run", "-n", str(n), "--", tools.check, "compressed"]
        proc = subprocess.run(argv, env=env, text=True, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=120)
        caught = re.search(r"corrupted compressed message on the link from rank \d+ .*"
                           r"\(GROVE_CHECKSUM\)", proc.stderr)
        if proc.returncode == 0 or not caught or "ok:" in proc.stdout:
            show("grove run", proc.stdout, proc.stderr)
            fail("corrupted compressed frame: expected the job to fail naming the link and "
                 "GROVE_CHECKSUM (exit status %d)" % proc.returncode)
        check_leftovers([JOB])
        return
    outputs = []
    ok, jobs = run_process_check(n, env, True, "compressed", outputs=outputs)
    check_leftovers(jobs)
    if not ok:
        return
    stats = {int(m.group(1)): [int(g) for g in m.groups()[1:]]
             for m in CODEC_STATS.finditer(outputs[0].stderr)}
    for rank in range(n):
        if rank not in stats:
            fail("rank %d logged no compression summary" % rank)
            continue
        sent, raw, frames, tried_raw, forwarded, decoded = stats[rank]
        if sent == 0 or frames >= raw or tried_raw == 0 or decoded == 0 or \
                (n >= 3 and forwarded == 0):
            fail("rank %d: compressed %d messages (%d -> %d bytes), tried raw %d, forwarded "
                 "%d, decoded %d: expected every kind" % (rank, sent, raw, frames, tried_raw,
                                                         forwarded, decoded))
    print("process_test: compressed on %d ranks: %s" % (n, stats))


DIRECT_COLLECTIVES = {"allreduce", "reducescatter", "allgather", "broadcast"}
# With the default GROVE_DIRECT_MIN_BYTES, calls moving at least this much must run direct
# (the default is to be chosen between 64 KiB and 1 MiB); smaller ones may go either way.
DEFAULT_SURELY_DIRECT = 4 << 20


def trace_calls(directory, n):
    """{rank: [call args]} from the GROVE_TRACE files trace-<rank>.json in `directory`."""
    calls = {}
    for rank in range(n):
        path = os.path.join(directory, "trace-%d.json" % rank)
        try:
            with open(path) as f:
                trace = json.load(f)
        except (OSError, ValueError) as e:
            fail("rank %d's trace %s: %s" % (rank, path, e))
            continue
        if trace["otherData"].get("dropped_calls", 0) != 0:
            fail("rank %d's trace dropped %s calls" % (rank, trace["otherData"]["dropped_calls"]))
        calls[rank] = [dict(e["args"], name=e["name"].split(" #")[0])
                       for e in trace["traceEvents"] if e.get("cat") == "call"]
    return calls


def moved_bytes(call, n):
    """max(send, receive) bytes of a traced call (its `bytes` is count x element size)."""
    if call["name"] in ("reducescatter", "allgather"):
        return call["bytes"] * n
    return call["bytes"]


def case_registered(args):
    n = int(args[0])
    default, tcp, expect_direct = ("--default" in args[1:], "--tcp" in args[1:],
                                   "--expect-direct" in args[1:])
    # --copies: GROVE_DIRECT=2, so calls whose buffers are partly ordinary memory go direct
    # too (through process_vm_readv); without it they run their plans.
    copies = "--copies" in args[1:]
    directory = tempfile.mkdtemp(prefix="grove-registered-")
    extra = {"GROVE_TRACE": os.path.join(directory, "trace-%r.json")}
    if tcp:
        extra["GROVE_TRANSPORT"] = "tcp"
    if not default:
        extra["GROVE_DIRECT_MIN_BYTES"] = "1"
    env = base_env(extra, timeout=120)
    env.pop("GROVE_DIRECT", None)
    if copies:
        env["GROVE_DIRECT"] = "2"
    if default:
        env.pop("GROVE_DIRECT_MIN_BYTES", None)
    ok, jobs = run_process_check(n, env, tcp, "registered", 580)
    if ok:
        calls = trace_calls(directory, n)
        direct = 0
        for rank, records in sorted(calls.items()):
            for call in records:
                if call["failed"]:
                    fail("rank %d: traced call failed: %s" % (rank, call))
                ran_direct = call["algorithm"] == "direct"
                direct += ran_direct
                moved = moved_bytes(call, n)
                if call["name"] not in DIRECT_COLLECTIVES or tcp:
                    must, may = False, False
                elif default or not copies:
                    # Calls over partly ordinary memory decline (GROVE_DIRECT=1); the
                    # all-registered ones must show up below.
                    must, may = False, moved > 0
                else:
                    must, may = moved > 0, moved > 0
                if expect_direct and ((must and not ran_direct) or (ran_direct and not may)):
                    fail("rank %d: %s of %d bytes ran %r, expected %s" % (
                        rank, call["name"], moved, call["algorithm"],
                        "direct" if must else "not direct"))
                    break
        print("process_test: %d of %d traced calls ran direct" % (
            direct, sum(len(c) for c in calls.values())))
        if expect_direct and not tcp and direct == 0:
            fail("no call ran direct (the all-registered calls of at least %d bytes must)"
                 % DEFAULT_SURELY_DIRECT)
    shutil.rmtree(directory, ignore_errors=True)
    check_leftovers(jobs)


def case_perf(args):
    n, collective, flags = int(args[0]), args[1], args[2:]
    # Rank 0 says the job id on stderr, then becomes grove perf.
    announce = 'if [ "$GROVE_RANK" = 0 ]; then echo "job $GROVE_JOB_ID" >&2; fi; exec "$0" "$@"'
    argv = [tools.grove, "run", "-n", str(n), "--", "sh", "-c", announce, tools.grove, "perf",
            collective, "-t", "1", "-b", "8", "-e", "256K", "-f", "8", "-n", "2", "-w", "1"] + flags
    proc = subprocess.run(argv, env=base_env(), text=True, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=280)
    jobs = set(re.findall(r"^job (\S+)$", proc.stderr, re.M))
    rows = [l.split() for l in proc.stdout.splitlines() if l.strip() and not l.startswith("#")]
    rank_lines = re.findall(r"^#\s+Rank\s+(\d+) .* transport (\S+)$", proc.stdout, re.M)
    problems = []
    if proc.returncode != 0:
        problems.append("exit status %d" % proc.returncode)
    if "# Out of bounds values : 0 OK" not in proc.stdout:
        problems.append("no '# Out of bounds values : 0 OK' line")
    if sorted(int(r) for r, _ in rank_lines) != list(range(n)):
        problems.append("rank lines %s" % rank_lines)
    if {t for _, t in rank_lines} != {"shm"}:
        problems.append("transports %s, expected shm" % sorted({t for _, t in rank_lines}))
    if not rows or any(len(r) != 13 or r[8] != "0" or r[12] != "0" for r in rows):
        problems.append("a row with a wrong value or of the wrong shape (or no rows)")
    types = flags[flags.index("-d") + 1] if "-d" in flags else "float"
    if types == "all" and len({r[2] for r in rows if len(r) == 13}) != 10:
        problems.append("types in the rows: %s" % sorted({r[2] for r in rows}))
    if len(jobs) != 1:
        problems.append("rank 0 did not say its job id")
    if problems:
        show("grove run ... grove perf", proc.stdout, proc.stderr)
        fail("grove perf %s with %d processes: %s" % (collective, n, "; ".join(problems)))
    check_leftovers(jobs)


def launcher_env(name, rank, size, port):
    root = "127.0.0.1:%d" % port
    if name == "torchrun":
        return {"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": str(size), "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port)}
    if name == "openmpi":
        return {"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(size),
                "OMPI_COMM_WORLD_LOCAL_RANK": str(rank), "OMPI_COMM_WORLD_LOCAL_SIZE": str(size),
                "GROVE_ROOT": root}
    if name == "mpich":
        return {"PMI_RANK": str(rank), "PMI_SIZE": str(size), "GROVE_ROOT": root}
    if name == "slurm":
        return {"SLURM_PROCID": str(rank), "SLURM_NTASKS": str(size), "SLURM_LOCALID": str(rank),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    if name == "filestore":
        # Slurm-style ranks meeting through a file store instead of the TCP store.
        return {"SLURM_PROCID": str(rank), "SLURM_NTASKS": str(size), "SLURM_LOCALID": str(rank),
                "GROVE_STORE": "file:" + FILE_STORE_DIR}
    raise SystemExit("process_test: unknown launcher %r" % name)


FILE_STORE_DIR = None  # made by case_launcher for the "filestore" launcher only


def case_launcher(args):
    global FILE_STORE_DIR
    name, n = args[0], int(args[1])
    if name == "filestore":
        FILE_STORE_DIR = tempfile.mkdtemp(prefix="grove-filestore-")
    port = free_port()
    envs = []
    for rank in range(n):
        env = launcher_env(name, rank, n, port)
        env["GROVE_JOB_ID"] = JOB
        envs.append(("%s rank %d" % (name, rank), env))
    ranks = launch_by_hand(envs, 60)
    expect_ok(ranks, {r: (i, n) for i, r in enumerate(ranks)})
    check_leftovers([JOB])
    if FILE_STORE_DIR is not None:
        shutil.rmtree(FILE_STORE_DIR, ignore_errors=True)


def case_mpirun(args):
    name, n = args[0], int(args[1])
    exe = "mpirun." + name
    if shutil.which(exe) is None:
        print("process_test: %s is not installed: skipped" % exe)
        sys.exit(SKIP)
    root = "127.0.0.1:%d" % free_port()
    if name == "openmpi":
        argv = [exe, "--allow-run-as-root", "--oversubscribe", "-np", str(n),
                "-x", "GROVE_ROOT=" + root, "-x", "GROVE_JOB_ID=" + JOB,
                "-x", "GROVE_PROC_TEST_MARKER", "-x", "GROVE_TIMEOUT", tools.check]
    else:
        argv = [exe, "-np", str(n), "-env", "GROVE_ROOT", root, "-env", "GROVE_JOB_ID", JOB,
                tools.check]
    proc = subprocess.run(argv, env=base_env(), text=True, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=280)
    ranks = sorted(int(m.group(1)) for m in map(OK_LINE.match, proc.stdout.splitlines()) if m)
    if proc.returncode != 0 or ranks != list(range(n)):
        show(exe, proc.stdout, proc.stderr)
        fail("%s -np %d process_check: exit status %d, ok lines from ranks %s"
             % (exe, n, proc.returncode, ranks))
    check_leftovers([JOB])


def case_bad(args):
    case = args[0]
    port = free_port()
    if case == "wrong_secret":
        envs = [("rank %d" % r, grove_env(r, 3, port)) for r in range(3)]
        envs[1] = ("rank 1 (wrong secret)", grove_env(1, 3, port, secret="not-the-secret"))
        ranks = launch_by_hand(envs, 10)
        expect_failures(ranks, [r"(?i)secret"] * 3, "a wrong GROVE_SECRET on rank 1")
    elif case == "missing_rank":
        envs = [("rank %d" % r, grove_env(r, 3, port)) for r in range(2)]
        ranks = launch_by_hand(envs, 5)
        expect_failures(ranks, [r"\b2\b[^\n]*(did not arrive|missing|never)"] * 2,
                        "rank 2 of 3 never started")
    elif case == "duplicate_rank":
        claimed = r"(?i)claimed|twice|two processes|duplicate"
        # Ranks 0, 1, 1 of 3: nobody can finish; the second rank 1 must say why.
        envs = [("rank 0", grove_env(0, 3, port)), ("rank 1 (first)", grove_env(1, 3, port)),
                ("rank 1 (second)", grove_env(1, 3, port))]
        ranks = launch_by_hand(envs, 10)
        expect_failures(ranks, [None] * 3, "ranks 0, 1, 1 of 3")
        if not any(re.search(claimed, error_line(r)) for r in ranks[1:]):
            fail("ranks 0, 1, 1 of 3: no rank 1 says the rank was claimed twice")
        # Ranks 0, 1, 2 and a second 1 of 3: the intruder must fail naming the claim; the
        # others may finish or fail, but none may hang.
        port = free_port()
        job = JOB + "b"
        envs = [("rank %d" % r, grove_env(r, 3, port, job=job)) for r in range(3)]
        envs.append(("rank 1 (second)", grove_env(1, 3, port, job=job)))
        more = launch_by_hand(envs, 10)
        rank1 = [more[1], more[3]]
        if not any(r.status not in (0, None) and re.search(claimed, error_line(r))
                   for r in rank1):
            for r in more:
                show(r.name, r.out, r.err)
            fail("ranks 0, 1, 2, 1 of 3: no rank 1 failed saying the rank was claimed twice")
        check_leftovers([job])
    elif case == "world_size_mismatch":
        envs = [("rank 0 (size 3)", grove_env(0, 3, port)),
                ("rank 1 (size 3)", grove_env(1, 3, port)),
                ("rank 2 (size 4)", grove_env(2, 4, port))]
        ranks = launch_by_hand(envs, 10)
        expect_failures(ranks, [r"(?i)world size"] * 3, "world sizes 3, 3, 4")
    elif case == "port_in_use":
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
            busy.bind(("0.0.0.0", 0))
            busy.listen(16)
            port = busy.getsockname()[1]
            envs = [("rank %d" % r, grove_env(r, 2, port)) for r in range(2)]
            ranks = launch_by_hand(envs, 5)
        expect_failures(ranks, [r"(?i)\b%d\b.*(in use|EADDRINUSE)|(in use|EADDRINUSE).*\b%d\b"
                                % (port, port), None], "rank 0's port already in use")
    else:
        raise SystemExit("process_test: unknown bad-input case %r" % case)
    check_leftovers([JOB])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grove", required=True)
    parser.add_argument("--check", required=True)
    parser.add_argument("case",
                        choices=["check", "compressed", "registered", "perf", "launcher", "mpirun",
                                 "bad"])
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    tools.grove, tools.check = os.path.abspath(options.grove), os.path.abspath(options.check)
    try:
        globals()["case_" + options.case](options.args)
    except subprocess.TimeoutExpired as e:
        fail("%s did not finish within %s s" % (e.cmd[:3], e.timeout))
        check_leftovers([JOB])
    if failures:
        sys.stderr.write("process_test: %d failure(s)\n" % len(failures))
        return 1
    print("process_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
