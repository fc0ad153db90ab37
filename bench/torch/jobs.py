# jobs.py: what allreduce.py and ddp.py share: running a benchmark as torchrun jobs of itself
# (driver side and worker side), interleaved rounds, table helpers, and the two emulated hosts.
"""Torchrun jobs of a benchmark script, shared by allreduce.py and ddp.py.

Each benchmark script is its own worker. Its driver starts one job per (backend, ranks,
round, ...): `torchrun ... <script> --worker --backend B ... --result FILE`; rank 0 of the job
writes its numbers to FILE (JSON), the driver reads them back.

  driver side   child_env (PYTHONPATH with python/ in front), run_job (one job: one torchrun,
                or one per namespace; a timeout; the log tails of a failed job), kill_group,
                run_rounds (every backend once per round, the order alternating between
                rounds), sigterm_exits, finish (the closing report), fmt, median_or_none,
                add_round_options and add_worker_options (the options both scripts have)
  worker side   init_worker (joins the process group), max_over_ranks, write_result
  two hosts     Namespaces: two network namespaces joined by a veth pair (allreduce.py --hosts2)
"""
import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(HERE, "results")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


# ----------------------------------------------------------------------------------------
# driver side: one job
# ----------------------------------------------------------------------------------------
def child_env(omp_threads, extra=None):
    """The environment of a job: python/ (the in-place build) in front of PYTHONPATH,
    OMP_NUM_THREADS = omp_threads (None: unset, the worker sets its threads itself), extra."""
    env = dict(os.environ)
    pythonpath = os.path.join(REPO, "python")
    env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                      else "")
    if omp_threads is None:
        env.pop("OMP_NUM_THREADS", None)
    else:
        env["OMP_NUM_THREADS"] = omp_threads
    env.update(extra or {})
    return env


def kill_group(proc):
    """Stops proc and everything in its session (torchrun and its ranks)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def run_job(commands, result, timeout):
    """Runs one job. commands: [(argv, env, log path)], all started at once, each in its own
    session, output to its log. Waits at most `timeout` seconds for all of them; when one
    fails, the others get 30 s to fail on their own, then all are stopped.
    Returns (the JSON in `result` | None, None | error with the last 25 lines of every log)."""
    procs, logs = [], []
    failed = None
    try:
        for argv, env, logpath in commands:
            log = open(logpath, "w")
            logs.append(log)
            procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))
        deadline = time.time() + timeout
        while any(p.poll() is None for p in procs):
            if time.time() > deadline:
                failed = f"timed out after {timeout} s"
                break
            if any(p.poll() not in (None, 0) for p in procs):
                # one side failed: give the other a moment to fail on its own, then stop it
                grace = time.time() + 30
                while any(p.poll() is None for p in procs) and time.time() < grace:
                    time.sleep(0.2)
                break
            time.sleep(0.2)
    finally:
        for p in procs:
            kill_group(p)
        for log in logs:
            log.close()
    codes = [p.returncode for p in procs]
    if failed is None and any(codes):
        failed = f"exit status {codes[0] if len(codes) == 1 else codes}"
    if failed is None and not os.path.exists(result):
        failed = "no result file"
    if failed:
        tails = []
        for log in logs:
            with open(log.name, errors="replace") as f:
                tails.append(f"--- {log.name} (last lines)\n" + "".join(f.readlines()[-25:]))
        return None, failed + "\n" + "\n".join(tails)
    with open(result) as f:
        return json.load(f), None


# ----------------------------------------------------------------------------------------
# driver side: rounds, signals, the closing report, tables, options
# ----------------------------------------------------------------------------------------
def run_rounds(args, world, stem, job, failures, what="", show=None):
    """args.rounds interleaved rounds: each runs every backend of args.backends once, the order
    alternating between rounds (so drift of the machine falls on all alike). job(label,
    backend) runs one job and returns (result | None, error | None); label is
    <stem>_n<world>_r<round>_<backend>. A failed job is printed and appended to failures,
    show(result), if given, is a line printed after a job that succeeded.
    Returns {backend: [the result of each round that succeeded]}."""
    runs = {b: [] for b in args.backends}
    for rnd in range(args.rounds):
        order = args.backends if rnd % 2 == 0 else list(reversed(args.backends))
        for backend in order:
            label = f"{stem}_n{world}_r{rnd}_{backend}"
            start = time.time()
            print(f"# round {rnd + 1}/{args.rounds}: {what}{backend}, {world} ranks ...",
                  end="", flush=True)
            result, error = job(label, backend)
            print(f" {time.time() - start:.0f} s" + (" FAILED" if error else ""), flush=True)
            if error:
                failures.append(f"{label}: {error}")
                print(error, file=sys.stderr, flush=True)
                continue
            if show is not None:
                print(show(result), flush=True)
            runs[backend].append(result)
    return runs


@contextlib.contextmanager
def sigterm_exits():
    """SIGTERM raises SystemExit(143) inside the block, so that `finally` clauses run."""
    original = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, original)


def finish(out, files, logdir, failures):
    """The closing lines of a run; returns the exit status (1 if any job failed)."""
    print(f"# wrote {out}/{files}; job logs in {logdir}")
    if failures:
        print(f"# {len(failures)} job(s) failed:", file=sys.stderr)
        for failure in failures:
            print("#   " + failure.splitlines()[0], file=sys.stderr)
        return 1
    return 0


def median_or_none(values):
    return statistics.median(values) if values else None


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def add_round_options(parser, rounds):
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--backends", nargs="+", default=["grove", "gloo"],
                        help="the first is the reference of the ratio column; grove:off and "
                             "grove:on are grove with GROVE_COMPRESS=off or on (backend_env)")


COMPRESS_VARIANTS = ("auto", "on", "off")


def backend_env(spec):
    """A --backends entry as (torch backend name, extra environment): "grove:off" is the grove
    backend with GROVE_COMPRESS=off (likewise :on, :auto); a plain name has no extras."""
    name, _, variant = spec.partition(":")
    if not variant:
        return name, {}
    if name != "grove" or variant not in COMPRESS_VARIANTS:
        raise SystemExit(f"--backends {spec}: expected a backend, or grove:auto|on|off")
    return name, {"GROVE_COMPRESS": variant}


def nic_speed_mbps(shape):
    """The GROVE_NIC_SPEED of a tc rate like "1gbit" or "100mbit" (0: not shaped)."""
    if not shape:
        return 0
    units = {"gbit": 1000, "mbit": 1}
    for suffix, scale in units.items():
        if shape.endswith(suffix):
            return int(float(shape[:-len(suffix)]) * scale)
    raise SystemExit(f"--shape {shape}: expected a rate in gbit or mbit, e.g. 1gbit")


def add_worker_options(parser, *names):
    """The internal options of one rank of a job: --worker, --backend, --result, names."""
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for name in ("--backend",) + names + ("--result",):
        parser.add_argument(name, help=argparse.SUPPRESS)


# ----------------------------------------------------------------------------------------
# worker side: one rank of a job
# ----------------------------------------------------------------------------------------
def init_worker(args):
    """Joins the job's process group (args.backend, timeout args.op_timeout s); returns
    (rank, world size)."""
    from datetime import timedelta

    import torch.distributed as dist

    if args.backend == "grove":
        import grove_torch  # noqa: F401  (registers the backend)

    dist.init_process_group(backend=args.backend, timeout=timedelta(seconds=args.op_timeout))
    return dist.get_rank(), dist.get_world_size()


def max_over_ranks(value, op=None):
    """all_reduce of one float64 over the job's ranks, op MAX unless given."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX if op is None else op)
    return float(t.item())


def write_result(path, data):
    """Writes the job's result file (JSON), atomically: the driver never reads half of it."""
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


def job_commands(worker, world, omp_threads, extra, netns, port, logdir, label,
                 announce_rate=False):
    """The torchrun commands of one job running `worker` (argv) on `world` ranks: one
    torchrun --standalone, or with `netns` (Namespaces) one torchrun per namespace, world/2
    ranks each, meeting at the first namespace's address on `port`, each rank bound to its
    namespace's interface, with a fresh GROVE_SECRET and (announce_rate) the link's rate as
    GROVE_NIC_SPEED, which lets GROVE_COMPRESS=auto compress (allreduce.py leaves it out: its
    zero-filled tensors would compress to nothing). Returns ([(argv, env, log path)], None) or (None, why not)."""
    if netns is None:
        return [(TORCHRUN + ["--standalone", "--nproc-per-node", str(world)] + worker,
                 child_env(omp_threads, extra), os.path.join(logdir, f"{label}.log"))], None
    if world % 2:
        return None, f"--hosts2 needs an even number of ranks, not {world}"
    secret = os.urandom(16).hex()
    commands = []
    for node in (1, 0):
        iface = netns.ifaces[node]
        argv = ["ip", "netns", "exec", netns.names[node]] + TORCHRUN + [
            "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", str(world // 2),
            "--master-addr", netns.addrs[0], "--master-port", str(port)] + worker
        env = dict(extra or {}, GROVE_SOCKET_IFNAME=iface, GLOO_SOCKET_IFNAME=iface,
                   GROVE_SECRET=secret)
        if announce_rate:
            env["GROVE_NIC_SPEED"] = str(nic_speed_mbps(netns.shape))
        env = child_env(omp_threads, env)
        commands.append((argv, env, os.path.join(logdir, f"{label}.node{node}.log")))
    return commands, None


# ----------------------------------------------------------------------------------------
# two emulated hosts (allreduce.py --hosts2)
# ----------------------------------------------------------------------------------------
class Namespaces:
    """Two network namespaces joined by a veth pair; removed by close()."""

    def __init__(self, shape):
        tag = f"{os.getpid() % 100000}"
        self.names = [f"gtb{tag}a", f"gtb{tag}b"]
        self.ifaces = [f"gtv{tag}a", f"gtv{tag}b"]
        self.addrs = ["198.18.0.1", "198.18.0.2"]
        self.shape = shape
        self.created = []

    @staticmethod
    def ip(*argv):
        subprocess.run(["ip", *argv], check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def open(self):
        try:
            for name in self.names:
                self.ip("netns", "add", name)
                self.created.append(name)
            self.ip("link", "add", self.ifaces[0], "type", "veth", "peer", "name", self.ifaces[1])
            for name, iface, addr in zip(self.names, self.ifaces, self.addrs):
                self.ip("link", "set", iface, "netns", name)
                self.ip("-n", name, "link", "set", "lo", "up")
                self.ip("-n", name, "addr", "add", f"{addr}/24", "dev", iface)
                self.ip("-n", name, "link", "set", iface, "up")
                if self.shape:
                    subprocess.run(["tc", "-n", name, "qdisc", "add", "dev", iface, "root", "tbf",
                                    "rate", self.shape, "burst", "128kb", "latency", "10ms"],
                                   check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except subprocess.CalledProcessError as error:
            raise SystemExit(f"{os.path.basename(sys.argv[0])}: cannot set up the namespaces "
                             f"({' '.join(error.cmd)}): {error.stderr.decode().strip()} "
                             f"(needs root and ip/tc)")
        # wait until the peer answers (veth carrier up)
        if shutil.which("ping") is None:
            time.sleep(1)
            return
        deadline = time.time() + 10
        while time.time() < deadline:
            if subprocess.run(["ip", "netns", "exec", self.names[0], "ping", "-c", "1", "-W", "1",
                               self.addrs[1]], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                return
            time.sleep(0.2)

    def close(self):
        for name in self.created:
            # whatever still runs inside is a descendant of this driver
            pids = subprocess.run(["ip", "netns", "pids", name], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)
        self.created = []
