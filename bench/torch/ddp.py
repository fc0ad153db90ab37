#!/usr/bin/env python3
"""DDP training throughput of torchvision resnet18 / resnet50: grove against gloo (CPU).

What is measured
  One torchrun job per (model, ranks, backend, round). Each rank builds the model with
  weights=None (random init, nothing downloaded; DDP broadcasts rank 0's parameters), wraps it
  in DistributedDataParallel (default buckets, 25 MiB) and trains with SGD (lr 0.01, momentum
  0.9) on one synthetic batch per rank (--batch images of 3 x --image x --image, random labels
  of 1000 classes), reused every step: no data loading is timed. torch.set_num_threads(T)
  with T = cores // ranks (at least 1), so the ranks do not oversubscribe the cores (on a
  2-core machine 4 ranks still do: 1 thread each, 4 processes).

  --warmup steps are run untimed, then --steps timed steps after a barrier; a step is
  zero_grad, forward, cross-entropy, backward (DDP's allreduces run inside it), optimizer
  step. images/s = ranks * batch * steps / (the slowest rank's elapsed time, an all_reduce
  MAX).

  Communication share, method: a DDP comm hook (register_comm_hook) replaces DDP's default
  allreduce hook with the same thing (all_reduce of the bucket, async, then divide by the
  world size) and records for every bucket the interval from the hook's call to the
  completion of the allreduce future (the time stamp is taken first thing in the future's
  then() callback). Per step, the union of those intervals (buckets in flight at the same
  time count once) is the step's communication time, so comm share = that union / step
  time, averaged over steps and over ranks. It counts time while an allreduce was pending,
  also where it overlapped backward compute, so it is an upper bound of what communication
  costs the step. A second, independent estimate: --nosync-steps steps run under
  ddp.no_sync() (no communication at all) after the timed steps; "exposed" = 1 - (median
  no_sync step time / median normal step time, each the slowest rank's) is the part of the
  step that communication adds. Both are
  printed; the exposed one is noisy on a loaded machine and can come out negative.

  After the timed steps (before the no_sync ones, which let the replicas drift apart) every
  rank's parameter checksum (float64 sum) is compared across ranks (an all_reduce MAX and
  MIN): the replicas must be identical.

  The driver runs --rounds interleaved rounds (each round runs every backend once, the order
  alternating between rounds) and reports medians over rounds. ratio = time(other) /
  time(first backend) = images/s(first) / images/s(other), as in allreduce.py; with the
  default `--backends grove gloo` it is gloo/grove, above 1 where grove trains faster.

Usage (from the repository root, with the venv's python; see bench/torch/README.md)
  build/venv/bin/python bench/torch/ddp.py                                  # both models, 2 and 4 ranks
  build/venv/bin/python bench/torch/ddp.py --models resnet18 --ranks 2 --rounds 2

Outputs under --out (default bench/torch/results/): ddp.txt, ddp.csv, ddp.json.
"""
import argparse
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


# ----------------------------------------------------------------------------------------
# worker: one rank of one torchrun job
# ----------------------------------------------------------------------------------------
class CommTimer:
    """DDP comm hook state: allreduce of the bucket, timed from the call to completion."""

    def __init__(self, world):
        self.world = world
        self.intervals = []
        self.buckets = 0

    @staticmethod
    def hook(state, bucket):
        import torch.distributed as dist
        start = time.perf_counter()
        future = dist.all_reduce(bucket.buffer(), async_op=True).get_future()

        def done(fut):
            state.intervals.append((start, time.perf_counter()))
            return fut.value()[0].div_(state.world)

        return future.then(done)


def union_length(intervals, lo, hi):
    spans = sorted((max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi)
    total, end = 0.0, lo
    for a, b in spans:
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def worker(args):
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    import torchvision
    from torch.nn.parallel import DistributedDataParallel as DDP

    if args.backend == "grove":
        import grove_torch  # noqa: F401  (registers the backend)

    dist.init_process_group(backend=args.backend, timeout=timedelta(seconds=args.op_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    threads = args.threads or max(1, (os.cpu_count() or 1) // int(os.environ.get(
        "LOCAL_WORLD_SIZE", world)))
    torch.set_num_threads(threads)

    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None)
    ddp = DDP(model)
    timer = CommTimer(world)
    ddp.register_comm_hook(timer, CommTimer.hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(1000 + rank)
    images = torch.randn(args.batch, 3, args.image, args.image, generator=gen)
    labels = torch.randint(0, 1000, (args.batch,), generator=gen)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    def max_over_ranks(value, op=dist.ReduceOp.MAX):
        t = torch.tensor([value], dtype=torch.float64)
        dist.all_reduce(t, op=op)
        return float(t.item())

    for _ in range(args.warmup):
        step()
    dist.barrier()
    timer.intervals.clear()
    marks = [time.perf_counter()]
    for _ in range(args.steps):
        loss = step()
        marks.append(time.perf_counter())
    elapsed = marks[-1] - marks[0]
    step_times = [b - a for a, b in zip(marks, marks[1:])]
    comm = [union_length(timer.intervals, a, b) for a, b in zip(marks, marks[1:])]
    comm_summed = sum(b - a for a, b in timer.intervals)
    buckets_per_step = len(timer.intervals) / max(1, args.steps)
    share = sum(comm) / elapsed

    # the replicas must be identical after the synchronized steps
    checksum = sum(float(p.detach().double().sum()) for p in model.parameters())
    hi = max_over_ranks(checksum)
    lo = -max_over_ranks(-checksum)
    in_sync = hi == lo

    nosync_step, nosync_times = None, []
    if args.nosync_steps:
        dist.barrier()
        with ddp.no_sync():
            for _ in range(args.nosync_steps):
                start = time.perf_counter()
                step()
                nosync_times.append(time.perf_counter() - start)
        nosync_step = statistics.median(nosync_times)

    slowest = max_over_ranks(elapsed)
    share_mean = max_over_ranks(share, dist.ReduceOp.SUM) / world
    step_median = statistics.median(step_times)
    step_median_max = max_over_ranks(step_median)
    exposed = None
    if nosync_step is not None:
        nosync_max = max_over_ranks(nosync_step)
        exposed = 1.0 - nosync_max / step_median_max
    images_per_s = world * args.batch * args.steps / slowest
    if rank == 0:
        print(f"[{args.backend} {args.model} n={world} threads={threads}] "
              f"{images_per_s:.2f} images/s, step {step_median * 1e3:.0f} ms (median, rank 0), "
              f"comm share {share_mean * 100:.1f}% ({buckets_per_step:.1f} buckets/step), "
              + (f"exposed {exposed * 100:.1f}% (no_sync step {nosync_step * 1e3:.0f} ms), "
                 if exposed is not None else "")
              + f"loss {float(loss):.3f}, replicas {'identical' if in_sync else 'DIFFER'} "
              f"(checksum max {hi!r} min {lo!r})", flush=True)
        if args.result:
            with open(args.result + ".tmp", "w") as f:
                json.dump({"backend": args.backend, "model": args.model, "world": world,
                           "threads": threads, "batch": args.batch, "image": args.image,
                           "steps": args.steps, "images_per_s": images_per_s,
                           "elapsed_s": slowest, "step_ms_rank0": [s * 1e3 for s in step_times],
                           "comm_share": share_mean, "comm_ms_rank0": [c * 1e3 for c in comm],
                           "comm_summed_ms_rank0": comm_summed * 1e3,
                           "buckets_per_step": buckets_per_step,
                           "nosync_step_ms": None if nosync_step is None else nosync_step * 1e3,
                           "nosync_step_ms_rank0": [t * 1e3 for t in nosync_times],
                           "exposed_share": exposed, "replicas_identical": in_sync,
                           "checksum_max": hi, "checksum_min": lo,
                           "torch": torch.__version__, "torchvision": torchvision.__version__}, f)
            os.replace(args.result + ".tmp", args.result)
    dist.barrier()
    dist.destroy_process_group()


# ----------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------
def child_env():
    env = dict(os.environ)
    pythonpath = os.path.join(REPO, "python")
    env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                      else "")
    env.pop("OMP_NUM_THREADS", None)  # the worker sets its threads itself
    return env


def run_job(args, model, backend, world, logdir, label):
    result = os.path.join(logdir, f"{label}.json")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc-per-node", str(world), os.path.abspath(__file__), "--worker",
           "--backend", backend, "--model", model, "--batch", str(args.batch),
           "--image", str(args.image), "--warmup", str(args.warmup), "--steps", str(args.steps),
           "--nosync-steps", str(args.nosync_steps), "--threads", str(args.threads),
           "--op-timeout", str(args.op_timeout), "--result", result]
    logpath = os.path.join(logdir, f"{label}.log")
    with open(logpath, "w") as log:
        proc = subprocess.Popen(cmd, env=child_env(), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=args.job_timeout)
            error = None if proc.returncode == 0 else f"exit status {proc.returncode}"
        except subprocess.TimeoutExpired:
            error = f"timed out after {args.job_timeout} s"
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
    if error is None and not os.path.exists(result):
        error = "no result file"
    with open(logpath, errors="replace") as f:
        lines = f.readlines()
    if error:
        return None, error + f"\n--- {logpath} (last lines)\n" + "".join(lines[-25:])
    line = next((l.strip() for l in lines if l.startswith(f"[{backend} ")), "")
    with open(result) as f:
        data = json.load(f)
    data["line"] = line
    return data, None


def med(values):
    return statistics.median(values) if values else None


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def driver(args):
    os.makedirs(args.out, exist_ok=True)
    logdir = tempfile.mkdtemp(prefix="grove-torch-ddp-")
    original_term = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    raw, rows, failures = {}, [], []
    try:
        for model in args.models:
            for world in args.ranks:
                runs = {b: [] for b in args.backends}
                for rnd in range(args.rounds):
                    order = args.backends if rnd % 2 == 0 else list(reversed(args.backends))
                    for backend in order:
                        label = f"ddp_{model}_n{world}_r{rnd}_{backend}"
                        start = time.time()
                        print(f"# round {rnd + 1}/{args.rounds}: {model}, {backend}, {world} "
                              f"ranks ...", end="", flush=True)
                        data, error = run_job(args, model, backend, world, logdir, label)
                        print(f" {time.time() - start:.0f} s" + (" FAILED" if error else ""),
                              flush=True)
                        if error:
                            failures.append(f"{label}: {error}")
                            print(error, file=sys.stderr, flush=True)
                            continue
                        print("#   " + data["line"], flush=True)
                        runs[backend].append(data)
                raw[f"{model}/{world}"] = runs
                row = {"model": model, "ranks": world}
                for b in args.backends:
                    jobs = runs[b]
                    exposed = [j["exposed_share"] for j in jobs if j["exposed_share"] is not None]
                    row[b] = {
                        "rounds": len(jobs),
                        "images_per_s": med([j["images_per_s"] for j in jobs]),
                        "comm_share": med([j["comm_share"] for j in jobs]),
                        "exposed_share": med(exposed),
                        "step_ms": med([statistics.median(j["step_ms_rank0"]) for j in jobs]),
                        "in_sync": all(j["replicas_identical"] for j in jobs),
                        "rounds_images_per_s": [j["images_per_s"] for j in jobs],
                    }
                rows.append(row)
    finally:
        signal.signal(signal.SIGTERM, original_term)

    ref, others = args.backends[0], args.backends[1:]
    head = [f"{'model':>9}", f"{'ranks':>5}"] + [f"{b + ' img/s':>11}" for b in args.backends] + \
        [f"{b + ' step ms':>13}" for b in args.backends] + \
        [f"{b + ' comm%':>11}" for b in args.backends] + \
        [f"{b + ' exposed%':>14}" for b in args.backends] + \
        [f"{o + '/' + ref + ' t':>12}" for o in others]
    lines = [f"# DDP training, batch {args.batch} per rank, {args.image}x{args.image}, "
             f"{args.warmup} warmup + {args.steps} timed steps, medians over {args.rounds} "
             f"interleaved rounds",
             "# comm% = union of allreduce-in-flight intervals (comm hook) / step time; "
             f"exposed% = 1 - no_sync step / step; ratio (X/{ref} t) = time(X)/time({ref}) "
             f"= images/s({ref})/images/s(X)", "  ".join(head)]
    for row in rows:
        cells = [f"{row['model']:>9}", f"{row['ranks']:>5}"]
        cells += [f"{fmt(row[b]['images_per_s'], '.2f'):>11}" for b in args.backends]
        cells += [f"{fmt(row[b]['step_ms'], '.0f'):>13}" for b in args.backends]
        cells += [f"{fmt(row[b]['comm_share'] and row[b]['comm_share'] * 100, '.1f'):>11}"
                  for b in args.backends]
        cells += [f"{fmt(None if row[b]['exposed_share'] is None else row[b]['exposed_share'] * 100, '.1f'):>14}"
                  for b in args.backends]
        for o in others:
            a, b = row[ref]["images_per_s"], row[o]["images_per_s"]
            cells.append(f"{fmt(a / b if a and b else None, '.2f'):>12}")
        bad = [b for b in args.backends if row[b]["rounds"] and not row[b]["in_sync"]]
        lines.append("  ".join(cells) + (f"  REPLICAS DIFFER: {','.join(bad)}" if bad else ""))
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "ddp.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "ddp.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["model", "ranks", "backend", "batch", "image", "steps", "rounds",
                      "images_per_s", "step_ms", "comm_share", "exposed_share",
                      "rounds_images_per_s", "replicas_identical"])
        for row in rows:
            for b in args.backends:
                c = row[b]
                out.writerow([row["model"], row["ranks"], b, args.batch, args.image, args.steps,
                              c["rounds"], fmt(c["images_per_s"], ".3f"), fmt(c["step_ms"], ".1f"),
                              fmt(c["comm_share"], ".4f"), fmt(c["exposed_share"], ".4f"),
                              ";".join(f"{v:.3f}" for v in c["rounds_images_per_s"]),
                              c["in_sync"]])
    with open(os.path.join(args.out, "ddp.json"), "w") as f:
        json.dump({"args": vars(args), "raw": raw, "failures": failures}, f, indent=1)
    print(f"# wrote {args.out}/ddp.{{txt,csv,json}}; job logs in {logdir}")
    if failures:
        print(f"# {len(failures)} job(s) failed:", file=sys.stderr)
        for failure in failures:
            print("#   " + failure.splitlines()[0], file=sys.stderr)
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["grove", "gloo"],
                        help="the first is the reference of the ratio column")
    parser.add_argument("--batch", type=int, default=8, help="images per rank per step")
    parser.add_argument("--image", type=int, default=224, help="image height and width")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--nosync-steps", type=int, default=3,
                        help="steps under no_sync() for the exposed-communication estimate "
                             "(0: skip)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads per rank (0: cores // ranks per host, at least 1)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    parser.add_argument("--job-timeout", type=float, default=1800)
    parser.add_argument("--op-timeout", type=float, default=600)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
