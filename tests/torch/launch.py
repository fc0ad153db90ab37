"""Starts the ranks of a torch.distributed job as real processes (the environment torchrun
gives: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and collects what they say.

Each rank runs `workers.py CASE` and prints one JSON line per result ("RESULT {...}");
run() returns, per rank, its exit code, its results and its output.
"""
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rank:
    def __init__(self, rank, process):
        self.rank = rank
        self.process = process
        self.code = None
        self.out = ""
        self.results = []

    def result(self, name):
        """The value of the first result called `name` (KeyError if none)."""
        for item in self.results:
            if item.get("name") == name:
                return item
        raise KeyError("rank %d reported no result %r; its output:\n%s" % (self.rank, name, self.out))


def start(case, ranks, args=(), env=None):
    port = free_port()
    children = []
    for rank in range(ranks):
        environment = dict(os.environ)
        environment.update({
            "RANK": str(rank), "WORLD_SIZE": str(ranks), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(ranks), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "OMP_NUM_THREADS": "1", "PYTHONPATH": os.path.join(REPO, "python"),
        })
        environment.update(env or {})
        process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "workers.py"), case] + [str(a) for a in args],
            env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        children.append(Rank(rank, process))
    return children


def finish(children, timeout=300):
    deadline = time.monotonic() + timeout
    for child in children:
        try:
            out, _ = child.process.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.process.kill()
            out, _ = child.process.communicate()
            out += "\n[killed by the test after %d s]" % timeout
        child.code = child.process.returncode
        child.out = out
        for line in out.splitlines():
            if line.startswith("RESULT "):
                child.results.append(json.loads(line[len("RESULT "):]))
    return children


def run(case, ranks, args=(), env=None, timeout=300):
    return finish(start(case, ranks, args, env), timeout)


def describe(children):
    return "\n".join("--- rank %d (exit %s)\n%s" % (c.rank, c.code, c.out[-4000:]) for c in children)
