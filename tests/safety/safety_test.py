#!/usr/bin/env python3
""""Safe by default" with real processes: life cycles that leave nothing behind, failures
around a call that are reported at once instead of at GROVE_TIMEOUT, jobs without a secret.

Each case starts safety_check processes as a launcher would (GROVE_RANK, GROVE_WORLD_SIZE,
GROVE_ROOT, ...) and watches them from the outside. GROVE_TIMEOUT is set far above anything a
case waits for, so a failure reported "fast" is told apart from one reported at the deadline
by what the error says (a timeout names the deadline), never by a clock; the detection times
printed are for the record. Exit status 0 = pass, 1 = fail, 77 = skipped.

Usage: safety_test.py SAFETY_CHECK CASE
"""
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
TIMEOUT = 120  # GROVE_TIMEOUT of every case: no case may need it
MARKER = "grove-safety-test-%d-%06d" % (os.getpid(), random.randrange(10**6))
LAUNCHER_VARS = re.compile(r"^(GROVE_.*|RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|"
                           r"MASTER_PORT|OMPI_.*|PMI_.*|PMIX_.*|MPI_LOCALRANKID|MPI_LOCALNRANKS|"
                           r"SLURM_.*)$")
ERROR_LINE = re.compile(r"^error (\d+) (.+?) (\d+) (.*)$")
OK_LINE = re.compile(r"^rank (\d+) ok: (.*)$")

CHECK = None
failures = []


def fail(message):
    failures.append(message)
    sys.stderr.write("safety_test: FAIL: %s\n" % message)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    """Ranks of one job; each started on demand with the job's variables plus its own."""

    def __init__(self, size, secret=True, env=None):
        self.size = size
        self.job = "stest%d%06d" % (os.getpid(), random.randrange(10**6))
        self.port = free_port()
        self.env = {k: v for k, v in os.environ.items() if not LAUNCHER_VARS.match(k)}
        self.env.update({"GROVE_WORLD_SIZE": str(size), "GROVE_ROOT": "127.0.0.1:%d" % self.port,
                         "GROVE_JOB_ID": self.job, "GROVE_TIMEOUT": str(TIMEOUT),
                         "GROVE_PROC_TEST_MARKER": MARKER})
        if secret:
            self.env["GROVE_SECRET"] = "safety-%s" % self.job
        self.env.update(env or {})
        self.procs = {}

    def start(self, rank, args, env=None):
        e = dict(self.env, GROVE_RANK=str(rank), GROVE_LOCAL_RANK=str(rank))
        e.update(env or {})
        p = subprocess.Popen([CHECK] + args, env=e, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        self.procs[rank] = p
        return p

    def wait_line(self, rank, pattern, limit=60):
        """Reads rank's stderr until a line matches `pattern`; returns what was read."""
        seen = []
        deadline = time.monotonic() + limit
        stream = self.procs[rank].stderr
        while time.monotonic() < deadline:
            line = stream.readline().decode(errors="replace")
            if not line:
                break
            seen.append(line)
            if re.search(pattern, line):
                return True, "".join(seen)
        return False, "".join(seen)

    def finish(self, limit=2 * TIMEOUT):
        """{rank: (stdout, stderr, status)} once every process ended (status None: killed)."""
        results = {}
        deadline = time.monotonic() + limit
        for rank, p in sorted(self.procs.items()):
            try:
                out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
                results[rank] = (out.decode(errors="replace"), err.decode(errors="replace"),
                                 p.returncode)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                results[rank] = (out.decode(errors="replace"), err.decode(errors="replace"), None)
        return results

    def kill_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
        for p in self.procs.values():
            p.communicate()

    def leftovers(self):
        return sorted(n for n in os.listdir("/dev/shm") if n.startswith("grove-%s" % self.job))


def error_of(out):
    """(code, detected_ns, message) of the rank's error line, or None."""
    for line in out.splitlines():
        m = ERROR_LINE.match(line)
        if m:
            return m.group(2), int(m.group(3)), m.group(4)
    return None


def expect_all_ok(case, results):
    for rank, (out, err, status) in results.items():
        if status != 0 or not any(OK_LINE.match(l) for l in out.splitlines()):
            fail("%s: rank %d ended with status %s:\n%s%s" % (case, rank, status, out, err[-2000:]))


def check_clean(case, job):
    left = job.leftovers()
    if left:
        fail("%s: left in /dev/shm: %s" % (case, left))


def case_reinit(mode, cycles, transports):
    for transport in transports:
        env = {"GROVE_TRANSPORT": "tcp"} if transport == "tcp" else {}
        with tempfile.TemporaryDirectory() as ids:
            env["SAFETY_ID_DIR"] = ids
            job = Job(2, env=env)
            for rank in range(2):
                job.start(rank, ["reinit", str(cycles), mode])
            results = job.finish()
        expect_all_ok("reinit %s %s" % (mode, transport), results)
        check_clean("reinit %s %s" % (mode, transport), job)
        for rank, (out, _, _) in sorted(results.items()):
            print("reinit %s over %s: %s" % (mode, transport, out.strip()))


def case_reinit_inproc():
    job = Job(1)
    job.start(0, ["reinit-inproc", "50", "3"])
    results = job.finish()
    expect_all_ok("reinit in process", results)
    print("reinit in process: %s" % results[0][0].strip())


def killed_during_init(case, size, started, victim, waiter, expected, env=None):
    """Starts `started` ranks of `size` (the others never come), kills `victim` once it has
    claimed its rank; `waiter` must fail at once with a message matching `expected`."""
    job = Job(size, env=dict({"GROVE_DEBUG": "INFO"}, **(env or {})))
    try:
        for rank in started:
            job.start(rank, ["init"])
        for rank in started:
            ok, seen = job.wait_line(rank, r"init: rank %d of %d claimed" % (rank, size))
            if not ok:
                fail("%s: rank %d never claimed its rank:\n%s" % (case, rank, seen))
                return
        if env and "GROVE_HEARTBEAT_TIMEOUT" in env:
            # The pulse counts from a rank's first wait after its claim: let it count once
            # (it then waits for the rank that never comes).
            time.sleep(1.5)
        killed_ns = time.monotonic_ns()
        job.procs[victim].send_signal(signal.SIGKILL)
        results = job.finish(TIMEOUT / 2)
    finally:
        job.kill_all()
        store = (env or {}).get("GROVE_STORE", "")
        if store.startswith("file:"):
            shutil.rmtree(store[len("file:"):], ignore_errors=True)
    out, err, status = results[waiter]
    error = error_of(out)
    if status is None or error is None:
        fail("%s: rank %d did not fail:\n%s%s" % (case, waiter, out, err[-2000:]))
        return
    code, detected_ns, message = error
    if not re.search(expected, message) or "did not arrive within" in message:
        fail("%s: rank %d failed with %s: %s (expected %r)" % (case, waiter, code, message,
                                                                 expected))
    check_clean(case, job)
    print("%s: rank %d reported the kill of rank %d after %.3f s: %s" %
          (case, waiter, victim, (detected_ns - killed_ns) / 1e9, message))


def case_unresolvable_root():
    job = Job(2, env={"GROVE_ROOT": "no-such-host.invalid:29500"})
    job.start(1, ["init"])
    results = job.finish(TIMEOUT / 2)
    out, err, status = results[1]
    error = error_of(out)
    if status is None or error is None or error[0] != "invalid argument" or \
            "no-such-host.invalid" not in error[2]:
        fail("unresolvable_root: expected an invalid-argument error naming the host, got "
             "status %s:\n%s%s" % (status, out, err[-2000:]))
        return
    print("unresolvable_root: %s" % error[2])


def case_leave(transport):
    env = {"GROVE_TRANSPORT": "tcp"} if transport == "tcp" else {}
    job = Job(3, env=env)
    for rank in range(3):
        job.start(rank, ["leave"])
    results = job.finish(TIMEOUT / 2)
    check_clean("leave %s" % transport, job)
    out, err, status = results[2]
    if status != 0:
        fail("leave %s: the leaving rank ended with status %s:\n%s%s" % (transport, status, out,
                                                                          err[-2000:]))
    named = False
    for rank in (0, 1):
        out, err, status = results[rank]
        error = error_of(out)
        if status is None or error is None:
            fail("leave %s: rank %d did not fail (status %s):\n%s%s" % (transport, rank, status, out, err[-2000:]))
            continue
        code, detected_ns, message = error
        # At once, not at a deadline: the first rank to see it names rank 2 as having left;
        # the other may hear of it from that rank, or see that rank's process end first.
        if "timed out" in message or "no heartbeat" in message:
            fail("leave %s: rank %d failed with %s at a deadline: %s" % (transport, rank, code,
                                                                       message))
            continue
        # Over TCP the leaver half-closes and waits for its peers' ends before closing, so
        # no reset replaces its bye: the waiter says "left" as on shared memory.
        named = named or re.search(r"rank 2 (left|failed: it left)", message) is not None
        waiting = [l for l in out.splitlines() if l.startswith("waiting ")]
        since = (detected_ns - int(waiting[0].split()[2])) / 1e9 if waiting else float("nan")
        print("leave %s: rank %d, %.3f s into its call: %s" % (transport, rank, since, message))
    if not named:
        fail("leave %s: no rank named rank 2 as the one that left" % transport)


def case_no_secret():
    # Two "hosts" (GROVE_HOST_ID), no secret: every rank warns; with a secret none does.
    for secret in (False, True):
        job = Job(2, secret=secret)
        for rank in range(2):
            job.start(rank, ["init"], {"GROVE_HOST_ID": "host%d" % rank})
        results = job.finish()
        expect_all_ok("no_secret", results)
        for rank, (out, err, status) in results.items():
            warned = "no secret" in err and "GROVE_SECRET" in err and "GROVE_SECRET_FILE" in err
            if warned != (not secret):
                fail("no_secret: rank %d with%s a secret %s:\n%s" %
                     (rank, "" if secret else "out", "warned" if warned else "did not warn",
                      err[-2000:]))
            elif warned:
                print("no_secret: rank %d warned: %s" %
                      (rank, [l for l in err.splitlines() if "no secret" in l][0]))


def case_require_secret():
    job = Job(2, secret=False, env={"GROVE_REQUIRE_SECRET": "1"})
    for rank in range(2):
        job.start(rank, ["init"])
    for rank, (out, err, status) in job.finish(TIMEOUT / 2).items():
        error = error_of(out)
        if error is None or error[0] != "invalid usage" or "GROVE_REQUIRE_SECRET" not in error[2]:
            fail("require_secret: rank %d: expected a refusal naming GROVE_REQUIRE_SECRET:\n%s%s"
                 % (rank, out, err[-2000:]))
        else:
            print("require_secret: rank %d refused: %s" % (rank, error[2]))
    with tempfile.NamedTemporaryFile("w", suffix=".secret") as f:
        f.write("from-a-file-%d\n" % random.randrange(10**9))
        f.flush()
        job = Job(2, secret=False, env={"GROVE_REQUIRE_SECRET": "1", "GROVE_SECRET_FILE": f.name})
        for rank in range(2):
            job.start(rank, ["init"])
        expect_all_ok("require_secret with GROVE_SECRET_FILE", job.finish())
        # A rank whose file holds another secret is refused by the store.
        job = Job(2, secret=False, env={"GROVE_SECRET_FILE": f.name})
        job.start(0, ["init"])
        with tempfile.NamedTemporaryFile("w") as other:
            other.write("another secret\n")
            other.flush()
            p = job.start(1, ["init"], {"GROVE_SECRET_FILE": other.name})
            try:
                out, err = p.communicate(timeout=TIMEOUT / 2)
            except subprocess.TimeoutExpired:
                out, err = b"", b"(did not end)"
        job.kill_all()
        error = error_of(out.decode(errors="replace"))
        if error is None or "job secret" not in error[2]:
            fail("require_secret: a rank with another secret file was not refused:\n%s%s" %
                 (out.decode(errors="replace"), err.decode(errors="replace")[-2000:]))


def case_stranger():
    """A process that knows the port but not the secret tries to be rank 1 first: it is
    refused, cannot claim the rank, and the real rank 1 joins."""
    job = Job(2)
    job.start(0, ["init"])
    stranger = subprocess.Popen([CHECK, "init"], env=dict(job.env, GROVE_RANK="1",
                                                          GROVE_SECRET="guessed"),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    try:
        out, err = stranger.communicate(timeout=TIMEOUT / 2)
    except subprocess.TimeoutExpired:
        stranger.kill()
        out, err = stranger.communicate()
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    error = error_of(out)
    if error is None or "job secret" not in error[2]:
        fail("stranger: expected a refusal naming the job secret, got status %s:\n%s%s" %
             (stranger.returncode, out, err[-2000:]))
    else:
        print("stranger: refused: %s" % error[2])
    job.start(1, ["init"])
    expect_all_ok("stranger (the real ranks)", job.finish())


def start_holding(size):
    """A job of `size` ranks that joined and then sleep (safety_check hold); None when a
    rank did not say so."""
    job = Job(size)
    for rank in range(size):
        job.start(rank, ["hold"])
    for rank in range(size):
        line = job.procs[rank].stdout.readline().decode(errors="replace")
        if not line.startswith("holding"):
            job.kill_all()
            fail("stale_segments: rank %d did not hold: %r" % (rank, line))
            return None
    return job


def case_stale_segments():
    """Every rank of a job SIGKILLed before its peers mapped its node segment: the segments
    stay in /dev/shm, nobody being left to remove them, until the next job starts. A job
    that still runs keeps its own."""
    dead, alive = start_holding(2), start_holding(2)
    if dead is None or alive is None:
        return
    try:
        left = dead.leftovers()
        kept = alive.leftovers()
        if not left or not kept:
            fail("stale_segments: the held jobs have no segments to test with: %s %s" %
                 (left, kept))
            return
        dead.kill_all()
        if dead.leftovers() != left:
            # A job of another test starting meanwhile (ctest runs two at once) reaps them too.
            print("stale_segments: another job removed the dead job's segments first")
        fresh = Job(2, env={"GROVE_DEBUG": "INFO"})
        for rank in range(2):
            fresh.start(rank, ["init"])
        results = fresh.finish()
        expect_all_ok("stale_segments (the next job)", results)
        if dead.leftovers():
            fail("stale_segments: the next job left the dead job's segments: %s" %
                 dead.leftovers())
        if alive.leftovers() != kept:
            fail("stale_segments: the next job removed a running job's segments: %s -> %s" %
                 (kept, alive.leftovers()))
        said = [l for l in results[0][1].splitlines() if "whose ranks all died" in l]
        print("stale_segments: %d segments of the killed job (%s) removed by the next job; "
              "the running job kept its %d: %s" % (len(left), ", ".join(left), len(kept),
                                                   said[0] if said else "(no log line)"))
    finally:
        alive.kill_all()
        for name in alive.leftovers() + dead.leftovers():
            os.unlink("/dev/shm/" + name)


def case_split_heap():
    for transport in ("shm", "tcp"):
        split_heap(transport)


def split_heap(transport):
    job = Job(2, env={"GROVE_TRANSPORT": "tcp"} if transport == "tcp" else {})
    for rank in range(2):
        job.start(rank, ["split", "2000"])
    results = job.finish()
    expect_all_ok("split_heap %s" % transport, results)
    m = re.search(r"heap in use (\d+) -> (\d+) bytes", results[0][0])
    if not m:
        fail("split_heap %s: no heap figures from rank 0: %s" % (transport, results[0][0]))
        return
    before, after = int(m.group(1)), int(m.group(2))
    # 1800 splits after the first 200. The store's keys once grew it by ~308 bytes a split;
    # what may remain is the C API's handle registry, which keeps a 24-byte slot per handle
    # ever issued so that a stale handle can never alias a newer communicator
    # (src/core/c_api_handles.hpp).
    if after - before > 64 * 1800:
        fail("split_heap %s: rank 0's heap grew by %d bytes over 1800 splits (%.0f a split)" %
             (transport, after - before, (after - before) / 1800))
    print("split_heap %s: rank 0 heap in use %d -> %d bytes over 1800 splits (%+d)" %
          (transport, before, after, after - before))


def main():
    global CHECK
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    CHECK, case = sys.argv[1], sys.argv[2]
    cases = {
        "reinit_env": lambda: case_reinit("env", 50, ("shm", "tcp")),
        "reinit_uid": lambda: case_reinit("uid", 50, ("shm",)),
        "reinit_inproc": case_reinit_inproc,
        "kill_during_init": lambda: killed_during_init(
            "kill_during_init", 3, (0, 2), 2, 0, r"rank 2 failed: its connection to the store"),
        "kill_store_during_init": lambda: killed_during_init(
            "kill_store_during_init", 3, (0, 1), 0, 1, r"connection to the store server was lost"),
        # A file store cannot report the closed connection: the init pulse finds the silence.
        "kill_during_init_file_store": lambda: killed_during_init(
            "kill_during_init_file_store", 3, (0, 2), 2, 0,
            r"rank 2 failed: no sign of life from it at the store",
            {"GROVE_STORE": "file:" + tempfile.mkdtemp(prefix="grove-safety-store-"),
             "GROVE_HEARTBEAT_TIMEOUT": "3"}),
        "unresolvable_root": case_unresolvable_root,
        "leave_shm": lambda: case_leave("shm"),
        "leave_tcp": lambda: case_leave("tcp"),
        "no_secret": case_no_secret,
        "require_secret": case_require_secret,
        "stranger": case_stranger,
        "split_heap": case_split_heap,
        "stale_segments": case_stale_segments,
    }
    if case not in cases:
        sys.exit("unknown case %s (expected one of %s)" % (case, ", ".join(sorted(cases))))
    cases[case]()
    if failures:
        print("safety_test %s: %d failure(s)" % (case, len(failures)))
        sys.exit(1)
    print("safety_test %s: passed" % case)


if __name__ == "__main__":
    main()
