#!/usr/bin/env python3
# ddp.py: DDP training throughput: its worker (one rank: model, comm-timing hook, timed and
# no_sync steps, replica check) and the driver (jobs per model, ranks, backend and round,
# the table, CSV, JSON). Launching jobs and interleaving rounds are in jobs.py.
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

  Across hosts (--hosts2): two network namespaces joined by a veth pair (jobs.Namespaces),
  N/2 ranks in each, optionally shaped (--shape 1gbit; grove's ranks get the rate as
  GROVE_NIC_SPEED, so GROVE_COMPRESS=auto compresses their TCP links). --backends grove
  grove:off compares grove with its compression on and off; every grove job runs with
  GROVE_DEBUG=INFO and the table's ratio column is the raw / compressed bytes of the real
  gradients its links carried (the ranks' closing summaries). --grad-dtype bfloat16 sends
  the buckets as bfloat16 (torch's bf16_compress_hook), float32 (default) as they are.

Usage (from the repository root, with the venv's python; see bench/torch/README.md)
  build/venv/bin/python bench/torch/ddp.py                                  # both models, 2 and 4 ranks
  build/venv/bin/python bench/torch/ddp.py --models resnet18 --ranks 2 --rounds 2
  sudo build/venv/bin/python bench/torch/ddp.py --hosts2 --shape 1gbit --models resnet18 \
      --ranks 2 --backends grove grove:off gloo --grad-dtype bfloat16

Outputs under --out (default bench/torch/results/): ddp.txt, ddp.csv, ddp.json.
"""
import argparse
import contextlib
import csv
import itertools
import json
import os
import re
import statistics
import sys
import tempfile
import time

import jobs
from jobs import fmt
from jobs import median_or_none as med


# ----------------------------------------------------------------------------------------
# worker: one rank of one torchrun job
# ----------------------------------------------------------------------------------------
class CommTimer:
    """DDP comm hook state: allreduce of the bucket, timed from the call to completion."""

    def __init__(self, world, bf16):
        self.world = world
        self.bf16 = bf16
        self.intervals = []
        self.buckets = 0

    @staticmethod
    def hook(state, bucket):
        import torch
        import torch.distributed as dist
        start = time.perf_counter()
        buffer = bucket.buffer()
        if state.bf16:
            # torch's bf16_compress_hook: the bucket travels as bfloat16, then is cast back.
            wire = buffer.to(torch.bfloat16)
            future = dist.all_reduce(wire, async_op=True).get_future()

            def done_bf16(fut):
                state.intervals.append((start, time.perf_counter()))
                buffer.copy_(fut.value()[0].div_(state.world))
                return buffer

            return future.then(done_bf16)
        future = dist.all_reduce(buffer, async_op=True).get_future()

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
    import torch
    import torch.distributed as dist
    import torchvision
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world = jobs.init_worker(args)
    threads = args.threads or max(1, (os.cpu_count() or 1) // int(os.environ.get(
        "LOCAL_WORLD_SIZE", world)))
    torch.set_num_threads(threads)

    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None)
    ddp = DDP(model)
    timer = CommTimer(world, args.grad_dtype == "bfloat16")
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
    hi = jobs.max_over_ranks(checksum)
    lo = -jobs.max_over_ranks(-checksum)
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

    slowest = jobs.max_over_ranks(elapsed)
    share_mean = jobs.max_over_ranks(share, dist.ReduceOp.SUM) / world
    step_median = statistics.median(step_times)
    step_median_max = jobs.max_over_ranks(step_median)
    exposed = None
    if nosync_step is not None:
        nosync_max = jobs.max_over_ranks(nosync_step)
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
            jobs.write_result(args.result, {
                "backend": args.backend, "model": args.model, "world": world,
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
                "torch": torch.__version__, "torchvision": torchvision.__version__})
    dist.barrier()
    dist.destroy_process_group()


# ----------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------
# GROVE_DEBUG=INFO's summary of a rank's compressed links (src/core/link_compression.cpp).
CODEC_STATS = re.compile(r"GROVE INFO compression: (\d+) messages sent compressed "
                         r"\((\d+) -> (\d+) bytes")


def run_job(args, model, spec, world, port, netns, logdir, label):
    """Runs one torchrun job (two with --hosts2, one per namespace); returns (result dict with
    the job's summary line and, for grove, the bytes its links compressed | None, error)."""
    backend, extra = jobs.backend_env(spec)
    result = os.path.join(logdir, f"{label}.json")
    worker = [os.path.abspath(__file__), "--worker",
              "--backend", backend, "--model", model, "--batch", str(args.batch),
              "--image", str(args.image), "--warmup", str(args.warmup), "--steps", str(args.steps),
              "--nosync-steps", str(args.nosync_steps), "--threads", str(args.threads),
              "--grad-dtype", args.grad_dtype, "--op-timeout", str(args.op_timeout),
              "--result", result]
    if backend == "grove":
        extra = dict(extra, GROVE_DEBUG="INFO")
    commands, error = jobs.job_commands(worker, world, None, extra, netns, port, logdir, label,
                                        announce_rate=True)
    if error:
        return None, error
    data, error = jobs.run_job(commands, result, args.job_timeout)
    if error:
        return None, error
    raw = frames = 0
    for _, _, logpath in commands:
        with open(logpath, errors="replace") as f:
            for line in f:
                if line.startswith(f"[{backend} "):
                    data["line"] = line.strip()
                if m := CODEC_STATS.search(line):
                    raw += int(m.group(2))
                    frames += int(m.group(3))
    data.setdefault("line", "")
    data["wire_ratio"] = raw / frames if frames else None
    return data, None


def driver(args):
    os.makedirs(args.out, exist_ok=True)
    logdir = tempfile.mkdtemp(prefix="grove-torch-ddp-")
    raw, rows, failures = {}, [], []
    netns = None
    ports = itertools.count(29601 + os.getpid() % 1000)  # a fresh master port per job
    with jobs.sigterm_exits(), contextlib.ExitStack() as cleanup:
        if args.hosts2:
            netns = jobs.Namespaces(args.shape)
            netns.open()
            cleanup.callback(netns.close)
            print(f"# two emulated hosts: namespaces {netns.names}, addresses {netns.addrs}, "
                  f"shaping: {args.shape or 'none'}", flush=True)
        for model in args.models:
            for world in args.ranks:
                runs = jobs.run_rounds(
                    args, world, f"ddp_{model}", failures=failures, what=f"{model}, ",
                    job=lambda label, backend: run_job(args, model, backend, world, next(ports),
                                                       netns, logdir, label),
                    show=lambda data: "#   " + data["line"])
                raw[f"{model}/{world}"] = runs
                row = {"model": model, "ranks": world}
                for b in args.backends:
                    done = runs[b]
                    exposed = [j["exposed_share"] for j in done if j["exposed_share"] is not None]
                    row[b] = {
                        "rounds": len(done),
                        "images_per_s": med([j["images_per_s"] for j in done]),
                        "comm_share": med([j["comm_share"] for j in done]),
                        "exposed_share": med(exposed),
                        "step_ms": med([statistics.median(j["step_ms_rank0"]) for j in done]),
                        "in_sync": all(j["replicas_identical"] for j in done),
                        "rounds_images_per_s": [j["images_per_s"] for j in done],
                        "wire_ratio": med([j["wire_ratio"] for j in done
                                           if j.get("wire_ratio") is not None]),
                    }
                rows.append(row)

    ref, others = args.backends[0], args.backends[1:]
    head = [f"{'model':>9}", f"{'ranks':>5}"] + [f"{b + ' img/s':>11}" for b in args.backends] + \
        [f"{b + ' step ms':>13}" for b in args.backends] + \
        [f"{b + ' comm%':>11}" for b in args.backends] + \
        [f"{b + ' exposed%':>14}" for b in args.backends] + \
        [f"{b + ' ratio':>11}" for b in args.backends] + \
        [f"{o + '/' + ref + ' t':>12}" for o in others]
    where = "1 host" if not args.hosts2 else \
        "2 emulated hosts" + (f" at {args.shape}" if args.shape else "")
    lines = [f"# DDP training on {where}, gradients {args.grad_dtype} on the wire, batch "
             f"{args.batch} per rank, {args.image}x{args.image}, "
             f"{args.warmup} warmup + {args.steps} timed steps, medians over {args.rounds} "
             f"interleaved rounds; ratio = raw / compressed bytes of grove's compressed links",
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
        cells += [f"{fmt(row[b]['wire_ratio'], '.3f'):>11}" for b in args.backends]
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
    return jobs.finish(args.out, "ddp.{txt,csv,json}", logdir, failures)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    jobs.add_round_options(parser, rounds=3)
    parser.add_argument("--batch", type=int, default=8, help="images per rank per step")
    parser.add_argument("--image", type=int, default=224, help="image height and width")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--nosync-steps", type=int, default=3,
                        help="steps under no_sync() for the exposed-communication estimate "
                             "(0: skip)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads per rank (0: cores // ranks per host, at least 1)")
    parser.add_argument("--grad-dtype", choices=["float32", "bfloat16"], default="float32",
                        help="bfloat16: the comm hook casts each bucket to bfloat16 for the "
                             "allreduce (torch's bf16_compress_hook)")
    parser.add_argument("--hosts2", action="store_true",
                        help="two emulated hosts (network namespaces, jobs.Namespaces), N/2 "
                             "ranks each; needs root")
    parser.add_argument("--shape", default=None,
                        help="with --hosts2: tc tbf rate on each link, e.g. 1gbit (grove's "
                             "ranks get it as GROVE_NIC_SPEED)")
    parser.add_argument("--out", default=jobs.RESULTS)
    parser.add_argument("--job-timeout", type=float, default=1800)
    parser.add_argument("--op-timeout", type=float, default=600)
    jobs.add_worker_options(parser, "--model")  # internal: one rank of a job
    args = parser.parse_args()
    if args.shape and not args.hosts2:
        parser.error("--shape needs --hosts2")
    if args.worker:
        worker(args)
        return 0
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
