#!/usr/bin/env python3
"""Fault injection with real processes: a peer that dies or stops must give every other rank
an error — quickly, never a hang, never a wrong result — and leave nothing behind.

Each trial starts N ranks of fault_check by hand (grove's own launcher variables, rank 0
serving the store, as `grove run` would — but without `grove run`, which would stop the
survivors itself), waits until every rank is in the middle of its loop of collectives, then
signals one rank:

  kill TRIALS [SEED]   SIGKILL a random rank in each of TRIALS trials over collectives, sizes,
                       rank counts and transports (shared memory, TCP). Every survivor must
                       report an error within 2 x GROVE_TIMEOUT (the test fails otherwise);
                       how fast is reported (median, slowest, how many took over 1 s).
                       Every survivor's error must name the killed rank as the origin
                       ("rank V failed: ..."), also when it heard of it second-hand.
  kill-direct TRIALS [SEED]
                       The same over the direct path's kernel copies: 5 ranks, allgather and
                       broadcast of 8 MiB, so that survivors leave the call while peers still
                       read their buffers.
  stop                 SIGSTOP one rank: the others must fail with a timeout that names it;
                       then, over TCP with GROVE_HEARTBEAT_TIMEOUT=2 and GROVE_TIMEOUT=60,
                       every other rank must fail with an error naming the stopped rank as
                       the origin ("no heartbeat from rank 1") long before GROVE_TIMEOUT.
  slow                 One rank sleeps before every message it sends (the test-only hook
                       GROVE_FAULT_DELAY_US with GROVE_FAULT_RANK): the job must still finish
                       every call with exact results, over shared memory and TCP, also when
                       the pause (2.5 s) outlasts GROVE_HEARTBEAT_TIMEOUT=2 (heartbeats keep
                       flowing while the rank is slow).
  corrupt              Over TCP the receiver flips a bit of one received frame (the test-only
                       hook GROVE_FAULT_CORRUPT_FRAME): with GROVE_CHECKSUM=1 the call fails
                       with a SystemError naming the link ("corrupted message on the link
                       from rank R"), never a wrong result; without it, the wrong result is
                       what the check sees (which is why the checksum exists).

After each trial no process of the trial may remain and no /dev/shm/grove-<job>-* entry.
Exit status 0 = pass, 1 = fail. Nothing here asserts how long anything took except the hard
2 x GROVE_TIMEOUT bound on detection, which is the failure-model promise under test.
"""
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import time

CHECK = None
MARKER = "grove-fault-test-%d-%06d" % (os.getpid(), random.randrange(10**6))
LAUNCHER_VARS = re.compile(r"^(GROVE_(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_SIZE|LOCAL_WORLD_SIZE|ROOT|"
                           r"SECRET|JOB_ID|TRANSPORT|STORE|HOST_ID|TRACE)|RANK|WORLD_SIZE|LOCAL_RANK|"
                           r"LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|OMPI_.*|PMI_.*|PMIX_.*|"
                           r"MPI_LOCALRANKID|MPI_LOCALNRANKS|SLURM_.*)$")
ERROR_LINE = re.compile(r"^error (\d+) (\S+) (\d+) (\d+) (.*)$")
failures = []


def fail(message):
    failures.append(message)
    sys.stderr.write("fault_test: FAIL: %s\n" % message)


def text(out, err):
    """A rank's (stdout, stderr) bytes as text."""
    return out.decode(errors="replace"), err.decode(errors="replace")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Trial:
    """N ranks of fault_check running one collective in a loop."""

    def __init__(self, n, collective, size, tcp, timeout, extra_env=None, iterations=None):
        self.n, self.timeout = n, timeout
        self.job = "ftest%d%06d" % (os.getpid(), random.randrange(10**6))
        self.label = "%s %dB n=%d %s" % (collective, size, n, "tcp" if tcp else "shm")
        port = free_port()
        self.procs = []
        self.early = []  # lines ranks printed before "ready"
        for rank in range(n):
            env = {k: v for k, v in os.environ.items() if not LAUNCHER_VARS.match(k)}
            env.update({"GROVE_RANK": str(rank), "GROVE_WORLD_SIZE": str(n),
                        "GROVE_LOCAL_RANK": str(rank), "GROVE_ROOT": "127.0.0.1:%d" % port,
                        "GROVE_SECRET": "fault-%s" % self.job, "GROVE_JOB_ID": self.job,
                        "GROVE_TIMEOUT": str(timeout), "GROVE_PROC_TEST_MARKER": MARKER})
            if tcp:
                env["GROVE_TRANSPORT"] = "tcp"
            env.update(extra_env or {})
            argv = [CHECK, collective, str(size)] + ([str(iterations)] if iterations else [])
            self.procs.append(subprocess.Popen(argv, env=env,
                                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, bufsize=0))

    def wait_ready(self, limit):
        """True when every rank printed 'ready' within `limit` seconds."""
        deadline = time.monotonic() + limit
        for p in self.procs:
            while True:
                if time.monotonic() > deadline:
                    return False
                # Unbuffered: readline() must not read ahead, or lines printed right after
                # "ready" would sit in a buffer that communicate() never looks at.
                line = p.stdout.readline().decode(errors="replace")
                if not line:
                    return False
                if line.startswith("ready"):
                    break
                self.early.append(line.strip())  # e.g. "init-error ...", for the report
        return True

    def finish(self, limit, stopped=None):
        """Waits for every process but `stopped` (killing what outlives `limit`), then kills
        and reaps `stopped`; returns {rank: (out, err, status)} of the others; status None
        means it had to be killed."""
        deadline = time.monotonic() + limit
        results = {}
        for rank, p in enumerate(self.procs):
            if rank == stopped:
                continue
            try:
                out, err = text(*p.communicate(timeout=max(0.1, deadline - time.monotonic())))
                results[rank] = (out, err, p.returncode)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = text(*p.communicate())
                results[rank] = (out, err, None)
        if stopped is not None:
            self.procs[stopped].send_signal(signal.SIGKILL)
            self.procs[stopped].communicate()
        return results

    def kill_all(self):
        """Kills what still runs; returns what every rank wrote, for the failure report."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        report = list(self.early)
        for rank, p in enumerate(self.procs):
            out, err = text(*p.communicate())
            report.append("rank %d (status %s): %s %s" %
                          (rank, p.returncode, out.strip()[-300:], err.strip()[-600:]))
        return "\n".join(report)


def start_trial(*args, **kwargs):
    """A Trial whose ranks all got ready, or (None, report). The store's port is picked free
    and then given to rank 0; in between another process may take it ("Address already in
    use"), so such a start is retried on a fresh port."""
    for _ in range(5):
        trial = Trial(*args, **kwargs)
        if trial.wait_ready(60):
            return trial, ""
        report = trial.kill_all()
        if "already in use" not in report:
            return None, report
    return None, report


def marked_processes():
    needle = ("GROVE_PROC_TEST_MARKER=%s\0" % MARKER).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def leftovers(job):
    """Processes of this run and shared-memory entries of `job` still present (removed)."""
    left = []
    for _ in range(50):
        pids = marked_processes()
        if not pids:
            break
        time.sleep(0.05)
    else:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        left.append("processes %s" % pids)
    entries = [e for e in os.listdir("/dev/shm") if e.startswith("grove-%s-" % job)]
    for e in entries:
        os.unlink(os.path.join("/dev/shm", e))
    if entries:
        left.append("/dev/shm %s" % sorted(entries))
    return left


def random_trial(rng):
    """A trial of case kill: (ranks, collective, bytes, over TCP, registered buffers)."""
    n = rng.choice([2, 3, 4, 5])
    collective = rng.choice(["allreduce", "broadcast", "allgather", "reducescatter",
                             "alltoall"])
    size = rng.choice([8, 4096, 1 << 20, 8 << 20])
    tcp = rng.random() < 0.25
    # Buffers from grove::allocate: from 1 MiB the shm calls take the direct path, where
    # peers read the victim's memory in place.
    registered = rng.random() < 0.4
    return n, collective, size, tcp, registered


def direct_copy_trial(rng):
    """A trial of case kill-direct: 5 ranks on shared memory reading each other's ordinary
    buffers with kernel copies (allgather and broadcast do by default). A survivor that sees
    the death first leaves the call and frees its buffer while others are still reading it;
    they must still name the killed rank, not the unreadable buffer."""
    return 5, rng.choice(["allgather", "broadcast"]), 8 << 20, False, False


def case_kill(trials, seed, choose=random_trial):
    rng = random.Random(seed)
    timeout = 10
    latencies = []
    survivors = errored = origin_named = 0
    for t in range(trials):
        n, collective, size, tcp, registered = choose(rng)
        trial, report = start_trial(n, collective, size, tcp, timeout,
                                    {"FAULT_CHECK_REGISTERED": "1"} if registered else None)
        if trial is not None and registered:
            trial.label += " registered"
        if trial is None:
            fail("trial %d (%s %dB n=%d): ranks did not get ready:\n%s" %
                 (t, collective, size, n, report))
            continue
        time.sleep(rng.uniform(0, 0.05))
        victim = rng.randrange(n)
        trial.procs[victim].send_signal(signal.SIGKILL)
        killed_ns = time.monotonic_ns()
        results = trial.finish(2 * timeout + 5)
        for rank, (out, err, status) in results.items():
            if rank == victim:
                continue
            survivors += 1
            lines = [ERROR_LINE.match(l) for l in out.splitlines()]
            lines = [m for m in lines if m]
            if status is None:
                fail("trial %d (%s): rank %d hung after rank %d was killed" %
                     (t, trial.label, rank, victim))
            elif "corrupt" in out:
                fail("trial %d (%s): rank %d computed a wrong result: %s" %
                     (t, trial.label, rank, out.strip()))
            elif status != 3 or not lines:
                fail("trial %d (%s): rank %d ended with status %s and no error line:\n%s%s" %
                     (t, trial.label, rank, status, out, err))
            else:
                m = lines[-1]
                latency = (int(m.group(3)) - killed_ns) / 1e9
                errored += 1
                if ("rank %d failed" % victim) in m.group(5):
                    origin_named += 1
                else:
                    fail("trial %d (%s): rank %d's error does not name rank %d as the origin: %s"
                         % (t, trial.label, rank, victim, m.group(5)))
                latencies.append(max(latency, 0.0))
                if latency > 1.0:
                    print("fault_test: trial %d (%s): rank %d noticed rank %d's death after "
                          "%.2f s: %s" % (t, trial.label, rank, victim, latency, m.group(5)))
                if latency > 2 * timeout:
                    fail("trial %d (%s): rank %d needed %.2f s to notice rank %d's death" %
                         (t, trial.label, rank, latency, victim))
        for what in leftovers(trial.job):
            fail("trial %d (%s): left behind: %s" % (t, trial.label, what))
    if latencies:
        latencies.sort()
        print("fault_test kill: %d trials, %d survivors, %d errored, %d named the origin; "
              "detection median %.3f s, slowest %.3f s, %d over 1 s" %
              (trials, survivors, errored, origin_named, statistics.median(latencies),
               latencies[-1], sum(1 for x in latencies if x > 1.0)))


def case_stop():
    timeout = 3
    for tcp in (False, True):
        trial, report = start_trial(3, "allreduce", 4096, tcp, timeout)
        if trial is None:
            fail("stop: ranks did not get ready:\n%s" % report)
            continue
        victim = 1
        trial.procs[victim].send_signal(signal.SIGSTOP)
        outputs = trial.finish(2 * timeout + 5, stopped=victim)
        named = False
        for rank, (out, err, status) in outputs.items():
            m = [ERROR_LINE.match(l) for l in out.splitlines()]
            m = [x for x in m if x]
            if status is None or not m:
                fail("stop (%s): rank %d did not fail with an error:\n%s%s" %
                     (trial.label, rank, out, err))
                continue
            code, message = m[-1].group(2), m[-1].group(5)
            if code not in ("Timeout", "RemoteError"):
                fail("stop (%s): rank %d failed with %s: %s" % (trial.label, rank, code, message))
            # The rank that timed out names the stopped rank; its peer may learn of that
            # failure first (RemoteError naming the rank that timed out).
            if code == "Timeout" and "rank %d" % victim in message:
                named = True
        if not named:
            fail("stop (%s): no timeout named the stopped rank %d: %s" %
                 (trial.label, victim, {r: o[0].strip() for r, o in outputs.items()}))
        for what in leftovers(trial.job):
            fail("stop (%s): left behind: %s" % (trial.label, what))
    case_heartbeat(True)
    case_heartbeat(False)
    print("fault_test stop: done")


def case_heartbeat(tcp):
    """SIGSTOP a rank over TCP or shared memory: heartbeats (GROVE_HEARTBEAT_TIMEOUT=2) must
    expose it long before the operation timeout (60 s); every other rank names it as the
    origin."""
    timeout, heartbeat = 60, 2
    trial, report = start_trial(3, "allreduce", 4096, tcp, timeout,
                                {"GROVE_HEARTBEAT_TIMEOUT": str(heartbeat)})
    if trial is None:
        fail("heartbeat: ranks did not get ready:\n%s" % report)
        return
    victim = 1
    trial.procs[victim].send_signal(signal.SIGSTOP)
    stopped_ns = time.monotonic_ns()
    # Well under GROVE_TIMEOUT: only heartbeats can end the calls this early.
    outputs = trial.finish(timeout / 2, stopped=victim)
    heartbeat_named = False
    slowest = 0.0
    for rank, (out, err, status) in outputs.items():
        m = [ERROR_LINE.match(l) for l in out.splitlines()]
        m = [x for x in m if x]
        if status is None or not m:
            fail("heartbeat (%s): rank %d did not fail before GROVE_TIMEOUT=%d:\n%s%s" %
                 (trial.label, rank, timeout, out, err))
            continue
        code, message = m[-1].group(2), m[-1].group(5)
        slowest = max(slowest, (int(m[-1].group(3)) - stopped_ns) / 1e9)
        if code != "RemoteError" or ("rank %d failed" % victim) not in message:
            fail("heartbeat (%s): rank %d failed with %s not naming rank %d as the origin: %s"
                 % (trial.label, rank, code, victim, message))
        if "no heartbeat from rank %d" % victim in message:
            heartbeat_named = True
    if not heartbeat_named:
        fail("heartbeat (%s): no error said 'no heartbeat from rank %d': %s" %
             (trial.label, victim, {r: o[0].strip() for r, o in outputs.items()}))
    for what in leftovers(trial.job):
        fail("heartbeat (%s): left behind: %s" % (trial.label, what))
    print("fault_test heartbeat (%s): stopped rank %d exposed after %.2f s at most "
          "(GROVE_HEARTBEAT_TIMEOUT=%d, GROVE_TIMEOUT=%d)" %
          (trial.label, victim, slowest, heartbeat, timeout))


def collect(trial, limit):
    """{rank: (lines, status)} once every rank ended (status None: killed at `limit`)."""
    return {rank: (out.splitlines(), status)
            for rank, (out, err, status) in trial.finish(limit).items()}


def case_slow():
    # (label, ranks, collective, bytes, tcp, delay us, iterations, extra env)
    runs = [("shm", 3, "allreduce", 1 << 20, False, 50000, 8, {}),
            ("tcp", 3, "allgather", 1 << 20, True, 50000, 8, {}),
            ("tcp, pause > heartbeat timeout", 2, "allreduce", 8, True, 2500000, 3,
             {"GROVE_HEARTBEAT_TIMEOUT": "2"})]
    for label, n, collective, size, tcp, delay, iterations, extra in runs:
        env = {"GROVE_FAULT_DELAY_US": str(delay), "GROVE_FAULT_RANK": "1"}
        env.update(extra)
        started = time.monotonic()
        trial, report = start_trial(n, collective, size, tcp, 60, env, iterations)
        if trial is None:
            fail("slow (%s): ranks did not get ready:\n%s" % (label, report))
            continue
        results = collect(trial, 120)
        for rank, (lines, status) in results.items():
            if status != 0 or ("done %d %d" % (rank, iterations)) not in lines:
                fail("slow (%s): rank %d did not finish %d exact calls (status %s): %s" %
                     (label, rank, iterations, status, lines[-3:]))
        for what in leftovers(trial.job):
            fail("slow (%s): left behind: %s" % (label, what))
        print("fault_test slow (%s): %d ranks, rank 1 pausing %.2f s before each message: %d "
              "calls each, all exact, in %.1f s" %
              (label, n, delay / 1e6, iterations, time.monotonic() - started))


def case_corrupt():
    for checksum in (True, False):
        env = {"GROVE_FAULT_CORRUPT_FRAME": "5"}
        if checksum:
            env["GROVE_CHECKSUM"] = "1"
        label = "GROVE_CHECKSUM=%d" % (1 if checksum else 0)
        trial, report = start_trial(2, "allreduce", 65536, True, 30, env)
        if trial is None:
            fail("corrupt (%s): ranks did not get ready:\n%s" % (label, report))
            continue
        results = collect(trial, 60)
        wrong = [r for r, (lines, _) in results.items() if any(l.startswith("corrupt") for l in lines)]
        errors = {r: ERROR_LINE.match(l) for r, (lines, _) in results.items() for l in lines
                  if ERROR_LINE.match(l)}
        hung = [r for r, (_, status) in results.items() if status is None]
        if hung:
            fail("corrupt (%s): ranks %s hung" % (label, hung))
        if checksum:
            caught = [m for m in errors.values() if m.group(2) == "SystemError" and
                      "corrupted message on the link from rank" in m.group(5)]
            if wrong or not caught or len(errors) != 2:
                fail("corrupt (%s): expected every rank to fail, one with a SystemError naming "
                     "the link, none with a wrong result; wrong results on %s, errors %s" %
                     (label, wrong, {r: m.group(0) for r, m in errors.items()}))
            else:
                print("fault_test corrupt (%s): %s" % (label, caught[0].group(5)))
        elif not wrong:
            fail("corrupt (%s): the flipped bit went unnoticed by the result check too; the "
                 "hook did not corrupt anything: %s" % (label, results))
        else:
            print("fault_test corrupt (%s): ranks %s computed a wrong result, as expected "
                  "without checksums" % (label, wrong))
        for what in leftovers(trial.job):
            fail("corrupt (%s): left behind: %s" % (label, what))


def main():
    global CHECK
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    CHECK = sys.argv[1]
    case = sys.argv[2]
    if case == "kill":
        trials = int(sys.argv[3]) if len(sys.argv) > 3 else 100
        seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
        case_kill(trials, seed)
    elif case == "kill-direct":
        trials = int(sys.argv[3]) if len(sys.argv) > 3 else 30
        seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
        case_kill(trials, seed, direct_copy_trial)
    elif case == "stop":
        case_stop()
    elif case == "slow":
        case_slow()
    elif case == "corrupt":
        case_corrupt()
    else:
        raise SystemExit("fault_test: unknown case %r" % case)
    if failures:
        sys.stderr.write("fault_test: %d failure(s)\n" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
