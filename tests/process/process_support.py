"""What the multi-process cases of process_test.py share: the run's marker and job id, the
launcher variables a case clears, processes started by hand and how their results and
leftovers are checked. process_test.py sets `tools` (the binaries under test) before any case
runs."""
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time


class Tools:
    """The binaries under test (absolute paths), set by process_test.py's main."""
    grove = None
    check = None


tools = Tools()

SKIP = 77
MARKER = "grove-proc-test-%d-%06d" % (os.getpid(), random.randrange(10**6))
JOB = "ptest%d%06d" % (os.getpid(), random.randrange(10**6))
OK_LINE = re.compile(r"^rank (\d+) ok: (\d+) ranks, transport (\S+), (\d+) checks, job (\S+)$")
# Variables of every launcher grove reads: removed from the inherited environment so that the
# test's own variables alone decide who each process is.
LAUNCHER_VARS = re.compile(r"^(GROVE_(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_SIZE|LOCAL_WORLD_SIZE|ROOT|"
                           r"SECRET|JOB_ID|TRANSPORT|STORE|HOST_ID)|RANK|WORLD_SIZE|LOCAL_RANK|"
                           r"LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|OMPI_.*|PMI_.*|PMIX_.*|"
                           r"MPI_LOCALRANKID|MPI_LOCALNRANKS|SLURM_.*)$")

failures = []


def fail(message):
    failures.append(message)
    sys.stderr.write("process_test: FAIL: %s\n" % message)


def base_env(extra=None, timeout=60):
    env = {k: v for k, v in os.environ.items() if not LAUNCHER_VARS.match(k)}
    env["GROVE_PROC_TEST_MARKER"] = MARKER
    env["GROVE_TIMEOUT"] = str(timeout)
    if extra:
        env.update(extra)
    return env


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show(name, out, err):
    sys.stderr.write("--- %s stdout\n%s--- %s stderr\n%s" % (name, out, name, err))


# ---- what a case leaves behind -------------------------------------------------------------

def marked_processes():
    """Pids of processes whose environment holds this run's marker."""
    needle = ("GROVE_PROC_TEST_MARKER=%s\0" % MARKER).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def check_leftovers(jobs):
    for _ in range(100):  # a process reaped by its parent a moment later is not a leftover
        left = marked_processes()
        if not left:
            break
        time.sleep(0.05)
    else:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        fail("processes left behind: %s" % left)
    for job in jobs:
        prefix = "grove-%s-" % job
        entries = [e for e in os.listdir("/dev/shm") if e.startswith(prefix)]
        if entries:
            for e in entries:
                try:
                    os.unlink(os.path.join("/dev/shm", e))
                except OSError:
                    pass
            fail("/dev/shm entries of job %s left behind: %s" % (job, sorted(entries)))


# ---- processes started by hand ---------------------------------------------------------------

class Rank:
    def __init__(self, name, env, argv=None):
        self.name = name
        self.proc = subprocess.Popen(argv or [tools.check], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out = self.err = ""
        self.status = None


def wait_all(ranks, limit):
    """Waits for every rank until `limit` seconds from now; a rank still running then hangs."""
    deadline = time.monotonic() + limit
    for r in ranks:
        try:
            r.out, r.err = r.proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            r.status = r.proc.returncode
        except subprocess.TimeoutExpired:
            r.proc.kill()
            r.out, r.err = r.proc.communicate()
            r.status = None
            fail("%s still running %d s after the start: it hangs" % (r.name, limit))


def expect_ok(ranks, expected):
    """`expected` maps a Rank to (its rank, the world size)."""
    for r in ranks:
        rank, size = expected[r]
        lines = [l for l in r.out.splitlines() if l.startswith("rank ")]
        m = OK_LINE.match(lines[0]) if len(lines) == 1 else None
        if r.status != 0 or m is None or int(m.group(1)) != rank or int(m.group(2)) != size:
            show(r.name, r.out, r.err)
            fail("%s: exit status %s, expected 0 and one line 'rank %d ok: %d ranks ...'"
                 % (r.name, r.status, rank, size))


def launch_by_hand(envs, timeout):
    ranks = [Rank(name, base_env(env, timeout)) for name, env in envs]
    wait_all(ranks, 3 * timeout + 60)
    return ranks


def run_process_check(n, env, tcp, suite=None, timeout=280, outputs=None):
    """grove run -n N -- process_check [SUITE]: (every rank said ok on the right transport,
    the job ids seen). `outputs`, a list: the finished process is appended to it."""
    argv = [tools.grove, "run", "-n", str(n), "--", tools.check] + ([suite] if suite else [])
    proc = subprocess.run(argv, env=env, text=True, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout)
    if outputs is not None:
        outputs.append(proc)
    lines = [OK_LINE.match(l) for l in proc.stdout.splitlines()]
    ranks = sorted(int(m.group(1)) for m in lines if m)
    jobs = {m.group(5) for m in lines if m}
    transports = {m.group(3) for m in lines if m}
    want_transport = "tcp" if tcp else "shm"
    if proc.returncode != 0 or ranks != list(range(n)) or len(jobs) != 1:
        show("grove run", proc.stdout, proc.stderr)
        fail("grove run -n %d process_check%s: exit status %d, ok lines from ranks %s"
             % (n, " " + suite if suite else "", proc.returncode, ranks))
        return False, jobs
    if transports != {want_transport}:
        show("grove run", proc.stdout, proc.stderr)
        fail("transports %s, expected %s" % (sorted(transports), want_transport))
        return False, jobs
    return True, jobs


def grove_env(rank, size, port, secret="s3cret-of-the-test", job=JOB):
    return {"GROVE_RANK": str(rank), "GROVE_WORLD_SIZE": str(size),
            "GROVE_ROOT": "127.0.0.1:%d" % port, "GROVE_SECRET": secret, "GROVE_JOB_ID": job}


def error_line(rank):
    """process_check's own error line (log lines such as GROVE WARN do not count)."""
    lines = [l for l in rank.err.splitlines() if "FAILED" in l]
    return lines[0] if lines else ""


def expect_failures(ranks, regexes, what):
    """Every rank must exit non-zero; rank i's error line must match regexes[i] (None:
    anything)."""
    for r, regex in zip(ranks, regexes):
        if r.status is None:
            continue  # already reported as a hang
        if r.status == 0:
            show(r.name, r.out, r.err)
            fail("%s: %s exited with status 0, expected a failure" % (what, r.name))
        elif regex is not None and not re.search(regex, error_line(r)):
            show(r.name, r.out, r.err)
            fail("%s: %s's error does not match %r" % (what, r.name, regex))
