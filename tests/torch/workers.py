"""The ranks' side of the torch backend tests: `workers.py CASE [ARGS]`, started by
launch.py with torchrun's environment. Each case prints RESULT lines (JSON)."""
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

import grove_torch  # noqa: F401  (registers "grove")

from matrix import check_collectives


def report(name, **values):
    values["name"] = name
    print("RESULT " + json.dumps(values), flush=True)


def leave(ranks):
    """Exits once `ranks` ranks called leave: rank 0 hosts torch's store, and a rank still
    reading it (a failed group cannot barrier) would see its host vanish."""
    store = dist.distributed_c10d._get_default_store()
    store.add("test/left", 1)
    if dist.get_rank() == 0:
        deadline = time.monotonic() + 30
        while store.add("test/left", 0) < ranks and time.monotonic() < deadline:
            time.sleep(0.01)
    os._exit(0)


def init(timeout_s=120):
    dist.init_process_group(backend=os.environ.get("TEST_BACKEND", "grove"),
                            timeout=timedelta(seconds=timeout_s))
    return dist.get_rank(), dist.get_world_size()


def case_collectives():
    rank, n = init()
    gloo = dist.new_group(backend="gloo")
    failures, checked, compared = check_collectives(rank, n, gloo)
    report("collectives", failures=failures[:50], failed=len(failures), checked=checked,
           compared=compared)
    dist.destroy_process_group()


def case_groups():
    rank, n = init()
    # A subset and the whole group, used alternately; the factory runs on members only.
    subset = dist.new_group(ranks=[0, n - 1], backend="grove")
    evens = dist.new_group(ranks=list(range(0, n, 2)), backend="grove")
    sums = []
    for step in range(3):
        t = torch.tensor([float(rank + 1)])
        dist.all_reduce(t)
        sums.append(t.item())
        if rank in (0, n - 1):
            s = torch.tensor([float(rank + 1 + step)])
            dist.all_reduce(s, group=subset)
            sums.append(s.item())
        if rank % 2 == 0:
            e = torch.tensor([float(rank)])
            dist.all_reduce(e, group=evens)
            sums.append(e.item())
    objects = [None] * n
    dist.all_gather_object(objects, {"rank": rank, "text": "r%d" % rank})
    listed = [{"x": [1, 2, 3]}, None] if rank == 0 else [None, None]
    dist.broadcast_object_list(listed, src=0)
    report("groups", sums=sums, objects=objects, broadcast=listed[0])
    dist.destroy_process_group()


def case_split():
    """split_group: [[2, 0], [1]] of 4 ranks (rank 3 in none), each split used beside the
    parent; the order of a split's list gives the ranks in it."""
    rank, n = init()
    pairs = dist.split_group(split_ranks=[[2, 0], [1]])
    got = {"member": pairs is not dist.GroupMember.NON_GROUP_MEMBER}
    if got["member"]:
        got["backend"] = dist.get_backend(pairs)
        got["rank"] = dist.get_rank(pairs)
        got["size"] = dist.get_world_size(pairs)
        t = torch.tensor([float(rank + 1), 10.0 * rank])
        dist.all_reduce(t, group=pairs)
        got["sum"] = t.tolist()
        b = torch.tensor([float(rank)] * 3)
        dist.broadcast(b, group_src=0, group=pairs)  # group rank 0: global rank 2 or 1
        got["broadcast"] = b.tolist()
    w = torch.tensor([float(rank + 1)])
    dist.all_reduce(w)  # the parent still works beside its splits
    got["world"] = w.item()
    report("split", **got)
    dist.destroy_process_group()


def case_reinit(cycles):
    # destroy_process_group + init_process_group through one store, as elastic restarts and
    # test suites do (torchrun's agent store): the group's keys repeat every cycle.
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store = dist.TCPStore("127.0.0.1", int(os.environ["MASTER_PORT"]), n, rank == 0,
                          timeout=timedelta(seconds=60))
    for cycle in range(int(cycles)):
        dist.init_process_group(backend=os.environ.get("TEST_BACKEND", "grove"), store=store,
                                rank=rank, world_size=n, timeout=timedelta(seconds=60))
        t = torch.tensor([float(rank + cycle)])
        dist.all_reduce(t)
        dist.destroy_process_group()
        if cycle == 0:
            first = (len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task")))
    report("reinit", last=t.item(), fds=[first[0], len(os.listdir("/proc/self/fd"))],
           threads=[first[1], len(os.listdir("/proc/self/task"))])
    store.set("done/%d" % rank, "1")
    if rank == 0:
        store.wait(["done/%d" % q for q in range(n)])


def case_kill():
    rank, n = init()
    victim = n - 1
    t = torch.ones(1000)
    started = None
    try:
        for step in range(1000000):
            if step == 20:
                if rank == victim:
                    os.kill(os.getpid(), signal.SIGKILL)
                started = time.monotonic()
            dist.all_reduce(t)
            t.fill_(1.0)
        report("kill", error=None)
    except Exception as error:  # noqa: BLE001  (the class is part of what is checked)
        report("kill", error=str(error), cls=type(error).__name__,
               seconds=time.monotonic() - (started or time.monotonic()))
    leave(n - 1)


def case_stop():
    rank, n = init(timeout_s=120)
    victim = n - 1
    t = torch.ones(10)
    dist.all_reduce(t)
    if rank == victim:
        report("stopping", pid=os.getpid())
        os.kill(os.getpid(), signal.SIGSTOP)
    started = time.monotonic()
    try:
        dist.all_reduce(t)
        report("stop", error=None)
    except Exception as error:  # noqa: BLE001
        report("stop", error=str(error), cls=type(error).__name__,
               seconds=time.monotonic() - started)
    leave(n - 1)


def case_kill_during_init():
    """Ranks 0 and 2 create a grove group (through torch's store) that rank 1 is late for;
    rank 2 is SIGKILLed while they wait. Torch's store cannot say that rank 2's connection
    closed, so rank 0 must find it by its silent init pulse, not at the group's timeout."""
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=120))
    rank = dist.get_rank()
    store = dist.distributed_c10d._get_default_store()
    if rank == 1:
        store.wait(["test/over"], timedelta(seconds=200))  # late, until rank 0 is done
        leave(2)
    if rank == 2:
        # Killed from outside (this process waits inside grove's init, in C++): 3 s lets its
        # pulse count at least once (its first beat comes with its first wait).
        subprocess.Popen(["sh", "-c", "sleep 3; kill -KILL %d" % os.getpid()],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    try:
        dist.new_group(backend=os.environ.get("TEST_BACKEND", "grove"),
                       timeout=timedelta(seconds=120))
        report("kill_during_init", error=None)
    except Exception as error:  # noqa: BLE001
        report("kill_during_init", error=str(error), cls=type(error).__name__,
               seconds=time.monotonic() - started)
    store.set("test/over", "1")
    leave(2)


def case_abort():
    """Rank 0 aborts its group while its all_reduce waits for rank 1, which never joins it."""
    rank, n = init(timeout_s=120)
    t = torch.ones(10)
    dist.all_reduce(t)
    store = dist.distributed_c10d._get_default_store()
    if rank == 0:
        work = dist.all_reduce(t, async_op=True)
        time.sleep(0.5)  # the progress thread is inside grove's call by now
        ended = work.is_completed()
        started = time.monotonic()
        dist.group.WORLD.abort()
        aborted = time.monotonic() - started
        try:
            work.wait()
            report("abort", error=None)
        except Exception as error:  # noqa: BLE001
            report("abort", error=str(error), cls=type(error).__name__, ended_before=ended,
                   abort_seconds=aborted, seconds=time.monotonic() - started)
        store.set("test/aborted", "1")
    else:
        store.wait(["test/aborted"])
    leave(n)


def case_mismatch():
    rank, n = init(timeout_s=int(os.environ.get("TEST_GROUP_TIMEOUT", "120")))
    # Every rank is past init first (through torch's store): a rank still connecting when
    # the others fail and exit would wait out its init deadline, the store telling it
    # nothing of their exit (see docs/pytorch.md).
    store = dist.distributed_c10d._get_default_store()
    store.add("test/up", 1)
    store.wait(["test/up"])
    while store.add("test/up", 0) < n:
        time.sleep(0.01)
    t = torch.ones(8)
    try:
        # Rank 0 broadcasts (as the root it may finish: it waits for nobody), the others
        # all-reduce; a second call shows the mismatch to rank 0 too.
        if rank == 0:
            dist.broadcast(t, src=0)
        else:
            dist.all_reduce(t)
        dist.all_reduce(t)
        report("mismatch", error=None)
    except Exception as error:  # noqa: BLE001
        report("mismatch", error=str(error), cls=type(error).__name__)
    leave(n)


def case_bad_input():
    rank, n = init()
    messages = {}
    for name, call in [
        ("int16_sum", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16))),
        ("complex_max", lambda: dist.all_reduce(torch.ones(4, dtype=torch.complex64),
                                                op=dist.ReduceOp.MAX)),
        ("float_band", lambda: dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BAND)),
        ("bad_root", lambda: dist.broadcast(torch.ones(4), src=n + 3)),
        ("any_source", lambda: dist.recv(torch.ones(4))),
    ]:
        try:
            call()
            messages[name] = None
        except Exception as error:  # noqa: BLE001
            messages[name] = str(error)
    # The group still works after refused calls (nothing was queued).
    t = torch.ones(3)
    dist.all_reduce(t)
    report("bad_input", messages=messages, after=t.tolist())
    dist.destroy_process_group()


def case_options(trace_dir):
    rank, n = init()
    refused = {}
    for name, settings in [("bad_value", {"GROVE_FIFO_DEPTH": 0}),
                           ("unknown", {"GROVE_NO_SUCH_KNOB": "1"}),
                           ("not_a_mapping", 42)]:
        try:
            dist.new_group(backend="grove", pg_options=settings)
            refused[name] = None
        except Exception as error:  # noqa: BLE001
            refused[name] = "%s: %s" % (type(error).__name__, error)
    # A knob set from code reaches the group's communicator: GROVE_TRACE writes this rank's
    # trace when the group is destroyed. The world group (made without it) writes none.
    traced = dist.new_group(backend="grove", pg_options=grove_torch.Options(
        GROVE_TRACE=os.path.join(trace_dir, "group-%r.json"), GROVE_CHECK=True))
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t, group=traced)
    dist.destroy_process_group(traced)
    dist.all_reduce(t)
    report("options", refused=refused, sum=t.tolist(),
           files=sorted(os.listdir(trace_dir)))
    dist.destroy_process_group()


def case_monitored(absent):
    rank, n = init(timeout_s=60)
    absent = int(absent)
    message = None
    if rank != absent:
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=2))
        except Exception as error:  # noqa: BLE001
            message = str(error)
    report("monitored", error=message)
    leave(n)


if __name__ == "__main__":
    case = sys.argv[1]
    try:
        if case in ("ddp", "fsdp"):
            import training
            getattr(training, "case_" + case)(report)
        else:
            globals()["case_" + case](*sys.argv[2:])
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
