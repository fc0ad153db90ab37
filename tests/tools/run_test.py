#!/usr/bin/env python3
"""Tests of `grove run`, the local launcher, run from the outside as a user's shell would.

Why a script: the launcher's contract is processes, environment variables, output lines,
signals and exit statuses; a test that starts the real binary and watches the real processes
checks all of them together. Each case is one CTest test (the TIMEOUT there is the only clock:
nothing here asserts how long anything took). Leftover processes are found the way `pgrep -f`
finds them, by scanning /proc/*/cmdline for a marker unique to the test run, and they are
waited for (a SIGTERM is delivered asynchronously) up to a bound before the case fails.

Usage: run_test.py GROVE CASE      (CASE: one of the names in CASES, or `all`)
"""
import os
import random
import re
import signal
import subprocess
import sys
import time

GROVE = None
MARKER = "grove-run-test-%d-%06d" % (os.getpid(), random.randrange(10**6))
# A unique sleep duration marks the ranks' own children (sleep cannot carry an extra argument).
SLEEP = "30.%06d" % random.randrange(10**6)


def fail(message, proc=None):
    if proc is not None:
        sys.stderr.write("--- stdout\n%s\n--- stderr\n%s\n" % (proc.stdout, proc.stderr))
    sys.stderr.write("run_test: FAIL: %s\n" % message)
    sys.exit(1)


def grove_run(args, env=None, timeout=60):
    full_env = dict(os.environ)
    full_env.pop("GROVE_SECRET", None)
    if env:
        full_env.update(env)
    return subprocess.run([GROVE, "run"] + args, capture_output=True, text=True, timeout=timeout,
                          env=full_env)


def marked_processes():
    """Pids whose command line holds the marker or the unique sleep (like pgrep -f)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except OSError:
            continue
        if MARKER in cmdline or SLEEP in cmdline:
            found.append((int(entry), cmdline.replace("\0", " ")))
    return found


def expect_no_leftovers():
    for _ in range(100):
        if not marked_processes():
            return
        time.sleep(0.05)
    left = marked_processes()
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    fail("processes left behind: %s" % left)


def expect(proc, status, stderr_regex=None):
    if proc.returncode != status:
        fail("exit status %d, expected %d" % (proc.returncode, status), proc)
    if stderr_regex is not None and not re.search(stderr_regex, proc.stderr):
        fail("stderr does not match %r" % stderr_regex, proc)


def case_environment():
    script = ('echo $GROVE_RANK $GROVE_WORLD_SIZE $GROVE_LOCAL_RANK $GROVE_LOCAL_WORLD_SIZE '
              '$GROVE_ROOT $GROVE_SECRET $GROVE_JOB_ID')
    proc = grove_run(["-n", "3", "sh", "-c", script])
    expect(proc, 0)
    rows = [line.split() for line in proc.stdout.splitlines()]
    if sorted(r[:4] for r in rows) != [["0", "3", "0", "3"], ["1", "3", "1", "3"],
                                      ["2", "3", "2", "3"]]:
        fail("rank lines", proc)
    shared = {tuple(r[4:]) for r in rows}
    if len(shared) != 1:
        fail("ranks disagree on GROVE_ROOT/GROVE_SECRET/GROVE_JOB_ID", proc)
    root, secret, job = shared.pop()
    if not re.fullmatch(r"127\.0\.0\.1:\d+", root) or int(root.split(":")[1]) == 0:
        fail("GROVE_ROOT %r" % root, proc)
    if not re.fullmatch(r"[0-9a-f]{32}", secret):
        fail("GROVE_SECRET %r is not 16 random bytes in hex" % secret, proc)
    if not re.fullmatch(r"[0-9a-f]+", job):
        fail("GROVE_JOB_ID %r" % job, proc)
    again = grove_run(["-n", "1", "sh", "-c", script])
    expect(again, 0)
    if again.stdout.split()[5:] == [secret, job]:
        fail("a second job got the same secret and job id", again)


def case_single_rank():
    proc = grove_run(["-n", "1", "--", "sh", "-c", "echo $GROVE_RANK/$GROVE_WORLD_SIZE"])
    expect(proc, 0)
    if proc.stdout != "0/1\n":
        fail("one rank", proc)


def case_options_passed():
    proc = grove_run(["-n", "2", "--port", "23456", "sh", "-c", "echo $GROVE_ROOT $GROVE_SECRET"],
                     env={"GROVE_SECRET": "feedc0de"})
    expect(proc, 0)
    if proc.stdout.splitlines() != ["127.0.0.1:23456 feedc0de"] * 2:
        fail("--port or an inherited GROVE_SECRET not passed on", proc)
    # Words after the command (even grove run's own flags, and `--`) belong to the command.
    proc = grove_run(["-n", "1", "printf", "<%s>", "-n", "5", "--", "--tag-output"])
    expect(proc, 0)
    if proc.stdout != "<-n><5><--><--tag-output>":
        fail("arguments not passed verbatim", proc)
    proc = grove_run(["-n", "1", "--", "printf", "<%s>", "-c", "--", "x"])
    expect(proc, 0)
    if proc.stdout != "<-c><--><x>":
        fail("arguments after -- not passed verbatim", proc)


def case_tag_output():
    script = 'echo out $GROVE_RANK; echo err $GROVE_RANK >&2; printf "part"; printf "ial"'
    proc = grove_run(["-n", "3", "--tag-output", "sh", "-c", script])
    expect(proc, 0)
    expected_out = sorted(["[%d]: out %d" % (r, r) for r in range(3)] +
                          ["[%d]: partial" % r for r in range(3)])
    if sorted(proc.stdout.splitlines()) != expected_out:
        fail("tagged stdout", proc)
    if sorted(proc.stderr.splitlines()) != ["[%d]: err %d" % (r, r) for r in range(3)]:
        fail("tagged stderr", proc)
    for r in range(3):  # Within one rank, lines keep their order.
        mine = [l for l in proc.stdout.splitlines() if l.startswith("[%d]" % r)]
        if mine != ["[%d]: out %d" % (r, r), "[%d]: partial" % r]:
            fail("rank %d's lines out of order" % r, proc)
    empty = grove_run(["-n", "2", "--tag-output", "true"])
    expect(empty, 0)
    if empty.stdout != "" or empty.stderr != "":
        fail("output invented for silent ranks", empty)


def case_failing_rank():
    script = 'if [ $GROVE_RANK = 1 ]; then exit 3; fi; sleep %s' % SLEEP
    proc = grove_run(["-n", "3", "sh", "-c", script, MARKER])
    expect(proc, 3, r"grove run: rank 1 \(pid \d+\) exited with status 3")
    if "rank 0" in proc.stderr or "rank 2" in proc.stderr:
        fail("ranks stopped by the launcher reported as failures", proc)
    expect_no_leftovers()


def case_killed_rank():
    script = 'if [ $GROVE_RANK = 2 ]; then kill -KILL $$; fi; sleep %s' % SLEEP
    proc = grove_run(["-n", "4", "--tag-output", "sh", "-c", script, MARKER])
    expect(proc, 128 + 9, r"grove run: rank 2 \(pid \d+\) killed by signal 9 \(SIGKILL\)")
    expect_no_leftovers()


def case_grace_kill():
    # Ranks 1 and 2 ignore SIGTERM (and so does their sleep), then say so with a file; rank 0
    # fails once both have. They are killed with SIGKILL after the grace period.
    ready = "/tmp/%s" % MARKER
    os.mkdir(ready)
    script = ("if [ $GROVE_RANK = 0 ]; then "
              "while [ ! -e %s/1 ] || [ ! -e %s/2 ]; do sleep 0.05; done; exit 1; fi; "
              "trap '' TERM; touch %s/$GROVE_RANK; sleep %s" % (ready, ready, ready, SLEEP))
    try:
        proc = grove_run(["-n", "3", "--grace", "0.5", "sh", "-c", script, MARKER])
    finally:
        for name in os.listdir(ready):
            os.unlink(os.path.join(ready, name))
        os.rmdir(ready)
    expect(proc, 1, r"rank 0 \(pid \d+\) exited with status 1(.|\n)*killing 2 ranks")
    expect_no_leftovers()


def start_and_signal(signum, flags):
    script = "echo ready; sleep %s" % SLEEP
    env = dict(os.environ)
    proc = subprocess.Popen([GROVE, "run", "-n", "3", "--tag-output"] + flags +
                            ["sh", "-c", script, MARKER],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    ready = set()
    while len(ready) < 3:
        line = proc.stdout.readline()
        if not line:
            proc.kill()
            fail("grove run ended before its ranks were ready")
        ready.add(line.strip())
    if ready != {"[0]: ready", "[1]: ready", "[2]: ready"}:
        proc.kill()
        fail("ready lines %s" % ready)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, err


def case_sigterm():
    status, err = start_and_signal(signal.SIGTERM, [])
    if status != 128 + signal.SIGTERM or "received SIGTERM" not in err:
        fail("after SIGTERM: status %d, stderr %r" % (status, err))
    expect_no_leftovers()


def case_sigint():
    status, err = start_and_signal(signal.SIGINT, ["--grace", "2"])
    if status != 128 + signal.SIGINT or "received SIGINT" not in err:
        fail("after SIGINT: status %d, stderr %r" % (status, err))
    expect_no_leftovers()


def case_missing_command():
    proc = grove_run(["-n", "2", "grove-no-such-command-" + MARKER])
    expect(proc, 127, r"cannot execute 'grove-no-such-command-.*' for rank 0: No such file or directory")
    proc = grove_run(["-n", "2", "/dev/null"])
    expect(proc, 126, r"cannot execute '/dev/null'")


def case_bad_flags():
    for n in ["0", "-1", "1025"]:
        expect(grove_run(["-n", n, "true"]), 1, r"-n/--nproc: %s is out of range" % n)
    expect(grove_run(["-n", "2", "--port", "70000", "true"]), 1, r"--port: 70000")
    expect(grove_run(["-n", "2", "--grace", "-1", "true"]), 1, r"--grace: -1")
    expect(grove_run(["-n", "2"]), 1, r"no command to run")
    expect(grove_run(["-n", "2", "--"]), 1, r"no command to run")
    expect(grove_run(["-n", "2", "--bogus", "true"]), 1, r"--bogus: not an option of grove run")
    proc = grove_run(["true"])
    if proc.returncode == 0 or "--nproc" not in proc.stderr:
        fail("a missing -n is not reported", proc)


def allowed_cpus(mask_list):
    """The CPUs of a Cpus_allowed_list such as "0-2,5"."""
    cpus = set()
    for part in mask_list.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def case_bind():
    own = sorted(os.sched_getaffinity(0))
    report = "grep Cpus_allowed_list /proc/self/status | cut -f2 | sed \"s/^/$GROVE_RANK /\""

    def masks(args):
        proc = grove_run(args + ["sh", "-c", report])
        expect(proc, 0)
        found = {}
        for line in proc.stdout.split("\n"):
            if line.strip():
                rank, mask = line.split()
                found[int(rank)] = allowed_cpus(mask)
        return found, proc

    # As many ranks as CPUs (at most 4): rank r runs on the r-th CPU this process may use.
    n = min(len(own), 4)
    found, proc = masks(["-n", str(n)])
    if found != {r: {own[r]} for r in range(n)}:
        fail("with %d ranks on CPUs %s the ranks' CPUs were %s" % (n, own, found), proc)
    found, proc = masks(["-n", str(n), "--bind", "none"])
    if found != {r: set(own) for r in range(n)}:
        fail("--bind none: the ranks' CPUs were %s, expected all of %s" % (found, own), proc)
    # More ranks than CPUs: auto leaves them unbound, core refuses naming the counts.
    found, proc = masks(["-n", str(len(own) + 1)])
    if found != {r: set(own) for r in range(len(own) + 1)}:
        fail("more ranks than CPUs: the ranks' CPUs were %s, expected all of %s" % (found, own),
             proc)
    expect(grove_run(["-n", str(len(own) + 1), "--bind", "core", "true"]), 1,
           r"--bind core: %d ranks but this launcher may run on only %d CPUs" %
           (len(own) + 1, len(own)))
    expect(grove_run(["-n", "2", "--bind", "socket", "true"]), 1,
           r"--bind: 'socket' is not a binding \(expected auto, core or none\)")


def case_shm_cleanup():
    if not os.path.isdir("/dev/shm"):
        return
    # Every rank leaves a segment of this job behind, and one of another job, then rank 1 fails.
    other = "/dev/shm/grove-otherjob%s-keep" % MARKER
    script = ('touch /dev/shm/grove-$GROVE_JOB_ID-seg$GROVE_RANK && touch %s && '
              'echo $GROVE_JOB_ID && [ $GROVE_RANK != 1 ]' % other)
    proc = grove_run(["-n", "3", "sh", "-c", script])
    try:
        expect(proc, 1, r"rank 1 \(pid \d+\) exited with status 1")
        job = set(proc.stdout.split())
        if len(job) != 1:
            fail("job ids %s" % job, proc)
        left = [n for n in os.listdir("/dev/shm") if n.startswith("grove-%s-" % job.pop())]
        if left:
            fail("segments left in /dev/shm: %s" % left, proc)
        if not os.path.exists(other):
            fail("another job's segment was removed", proc)
    finally:
        if os.path.exists(other):
            os.unlink(other)


CASES = {name[len("case_"):]: f for name, f in globals().items() if name.startswith("case_")}


def main(argv):
    global GROVE
    if len(argv) != 3 or (argv[2] not in CASES and argv[2] != "all"):
        sys.stderr.write("usage: run_test.py GROVE {%s|all}\n" % "|".join(sorted(CASES)))
        return 2
    GROVE = argv[1]
    for name in (sorted(CASES) if argv[2] == "all" else [argv[2]]):
        CASES[name]()
        print("run_test: %s passed" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
