#!/usr/bin/env python3
# allreduce.py: the all_reduce sweep: its worker (one rank: the checked call and the timed
# loop per size), the driver (jobs per backend, ranks and round) and its outputs (tables, CSV,
# JSON, PNG). Launching jobs, rounds and the two-host namespaces are in jobs.py.
"""torch.distributed.all_reduce: grove against gloo, float32, 4 B .. 256 MiB (factor 4).

What is measured
  One torchrun job per (backend, ranks, round). In a job, for each size: one checked call
  (every rank fills rank+1, the result must be n(n+1)/2 everywhere), warmup calls, then
  `reps` samples. A sample is: dist.barrier(), time k back-to-back all_reduce calls
  (synchronous, op SUM, on a zero-filled tensor), divide by k; the per-rank time is reduced
  with an all_reduce MAX (float64, same backend, outside the timed loop) so every rank
  reports the slowest rank's time. The job reports the median of its samples per size.
  k shrinks with the size (about 32 MiB moved per sample, 1..200 calls) and so do reps.

  The driver runs `--rounds` interleaved rounds: each round runs every backend once, the
  order of the backends alternating between rounds, so slow drift of the machine (other
  work, thermal, page cache) hits both backends alike. The reported time is the median over
  rounds of the per-job medians. busbw = 2(n-1)/n * bytes / time (nccl-tests' rule for
  allreduce). ratio = time(other) / time(first backend): with the default `--backends grove
  gloo` it is gloo/grove, above 1 where grove is faster.

Modes
  default    all ranks on this host: `torchrun --standalone --nproc-per-node N`.
  --hosts2   two emulated hosts: two network namespaces joined by a veth pair
             (198.18.0.1/24 and 198.18.0.2/24, RFC 2544 benchmark range), optionally shaped
             with tc tbf (--shape 1gbit); N/2 ranks per namespace, one torchrun per namespace
             (--nnodes 2 --node-rank R --master-addr 198.18.0.1), GROVE_SOCKET_IFNAME and
             GLOO_SOCKET_IFNAME set to the namespace's veth. Needs root. The namespaces are
             deleted afterwards, whatever happens.

Usage (from the repository root, with the venv's python; see bench/torch/README.md)
  build/venv/bin/python bench/torch/allreduce.py --ranks 2 4 --rounds 5
  build/venv/bin/python bench/torch/allreduce.py --ranks 2 --rounds 2 --max-bytes 1M
  build/venv/bin/python bench/torch/allreduce.py --hosts2 --shape 1gbit --ranks 2 --rounds 3

Outputs under --out (default bench/torch/results/): <tag>.txt (the tables), <tag>.csv,
<tag>.png, <tag>.json (every round's numbers), tag = allreduce_1host or allreduce_2hosts[_RATE].
"""
import argparse
import csv
import itertools
import json
import os
import statistics
import sys
import tempfile
import time

import jobs
from jobs import fmt

MiB = 1 << 20


# ----------------------------------------------------------------------------------------
# sizes and schedule
# ----------------------------------------------------------------------------------------
def parse_bytes(text):
    text = text.strip().upper().rstrip("B")
    scale = 1
    for suffix, factor in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            text, scale = text[:-1], factor
            break
    return int(float(text) * scale)


def human(nbytes):
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor} {unit}"
    return f"{nbytes} B"


def sizes_up_to(min_bytes, max_bytes):
    sizes, size = [], max(4, min_bytes)
    while size <= max_bytes:
        sizes.append(size)
        size *= 4
    return sizes


def schedule(nbytes, scale):
    """(calls per sample k, samples, warmup calls) for one size."""
    k = max(1, min(200, (32 * MiB) // nbytes))
    k = max(1, int(round(k * scale)))
    reps = 7 if nbytes <= MiB else 5 if nbytes <= 16 * MiB else 3
    warmup = max(2, k // 4)
    return k, reps, warmup


def busbw_gbps(nbytes, world, seconds):
    return 2.0 * (world - 1) / world * nbytes / seconds / 1e9


# ----------------------------------------------------------------------------------------
# worker: one rank of one torchrun job
# ----------------------------------------------------------------------------------------
def worker(args):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    rank, world = jobs.init_worker(args)

    # job warmup: connections, progress threads and caches settle before the first size
    warm = torch.zeros(1, dtype=torch.float32)
    for _ in range(200):
        dist.all_reduce(warm)
    dist.barrier()

    results = []
    expected = world * (world + 1) / 2
    for nbytes in sizes_up_to(args.min_bytes, args.max_bytes):
        count = nbytes // 4
        t = torch.empty(count, dtype=torch.float32)
        k, reps, warmup = schedule(nbytes, args.iters_scale)

        # the checked call
        t.fill_(rank + 1)
        dist.all_reduce(t)
        bad = int((t != expected).sum().item())
        if bad:
            first = int((t != expected).nonzero()[0].item())
            print(f"rank {rank}: {args.backend} all_reduce of {nbytes} B WRONG: {bad} of {count} "
                  f"elements differ, first at {first}: {t[first].item()} != {expected}",
                  file=sys.stderr, flush=True)
        bad_anywhere = jobs.max_over_ranks(float(bad))

        t.zero_()
        for _ in range(warmup):
            dist.all_reduce(t)
        samples = []
        for _ in range(reps):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(k):
                dist.all_reduce(t)
            elapsed = (time.perf_counter() - start) / k
            samples.append(jobs.max_over_ranks(elapsed))
        median = statistics.median(samples)
        results.append({"bytes": nbytes, "us": median * 1e6,
                        "samples_us": [s * 1e6 for s in samples],
                        "k": k, "reps": reps, "warmup": warmup, "wrong": int(bad_anywhere)})
        if rank == 0:
            print(f"[{args.backend} n={world}] {nbytes:>10} B  {median * 1e6:12.2f} us  "
                  f"busbw {busbw_gbps(nbytes, world, median):8.3f} GB/s  (k={k}, reps={reps})"
                  + ("  WRONG RESULT" if bad_anywhere else ""), flush=True)
        del t

    if rank == 0 and args.result:
        jobs.write_result(args.result, {"backend": args.backend, "world": world,
                                        "torch": torch.__version__, "sizes": results})
    dist.barrier()
    dist.destroy_process_group()


# ----------------------------------------------------------------------------------------
# driver: launches the jobs, interleaves rounds, prints the tables, writes CSV and PNG
# ----------------------------------------------------------------------------------------
def worker_argv(args, backend, result):
    return [os.path.abspath(__file__), "--worker", "--backend", backend,
            "--min-bytes", str(args.min_bytes), "--max-bytes", str(args.max_bytes),
            "--iters-scale", str(args.iters_scale), "--op-timeout", str(args.op_timeout),
            "--result", result]


def run_job(args, backend, world, port, netns, logdir, label):
    """Runs one torchrun job (or two, one per namespace); returns (result dict | None, error)."""
    result = os.path.join(logdir, f"{label}.json")
    commands, error = jobs.job_commands(worker_argv(args, backend, result), world, "1", None,
                                        netns, port, logdir, label)
    if error:
        return None, error
    return jobs.run_job(commands, result, args.job_timeout)


def summarize(args, per_round, world):
    """per_round[backend] = list of job results; returns rows of dicts."""
    rows = []
    for nbytes in sizes_up_to(args.min_bytes, args.max_bytes):
        row = {"bytes": nbytes}
        for backend in args.backends:
            values, wrong = [], 0
            for job in per_round.get(backend, []):
                for entry in job["sizes"]:
                    if entry["bytes"] == nbytes:
                        values.append(entry["us"])
                        wrong += entry["wrong"]
            med = jobs.median_or_none(values)
            row[backend] = {"us": med, "rounds_us": values, "wrong": wrong,
                            "busbw": busbw_gbps(nbytes, world, med * 1e-6) if med else None}
        rows.append(row)
    return rows


def table_text(args, rows, world, title):
    ref = args.backends[0]
    others = args.backends[1:]
    head = [f"{'size':>10}"] + [f"{b + ' us':>12}" for b in args.backends] + \
        [f"{b + ' GB/s':>11}" for b in args.backends] + \
        [f"{o + '/' + ref:>12}" for o in others]
    lines = [f"# {title}", "# time: median over rounds of each job's median time per call "
             f"(max over ranks); busbw = 2(n-1)/n*bytes/time; ratio = time(other)/time({ref})",
             "  ".join(head)]
    for row in rows:
        cells = [f"{human(row['bytes']):>10}"]
        cells += [f"{fmt(row[b]['us'], '.2f'):>12}" for b in args.backends]
        cells += [f"{fmt(row[b]['busbw'], '.3f'):>11}" for b in args.backends]
        for o in others:
            a, b = row[o]["us"], row[ref]["us"]
            cells.append(f"{fmt(a / b if a and b else None, '.2f'):>12}")
        flags = [b for b in args.backends if row[b]["wrong"]]
        line = "  ".join(cells) + (f"  WRONG RESULTS: {','.join(flags)}" if flags else "")
        lines.append(line)
    return "\n".join(lines)


def plot(path, tag, all_rows, backends):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("allreduce.py: matplotlib is not installed (bench/torch/requirements.txt); no PNG",
              file=sys.stderr)
        return
    worlds = sorted(all_rows)
    fig, axes = plt.subplots(2, len(worlds), figsize=(6 * len(worlds), 8), squeeze=False)
    for col, world in enumerate(worlds):
        rows = all_rows[world]
        for backend in backends:
            xs = [r["bytes"] for r in rows if r[backend]["us"]]
            axes[0][col].loglog(xs, [r[backend]["us"] for r in rows if r[backend]["us"]],
                                marker="o", label=backend)
            axes[1][col].semilogx(xs, [r[backend]["busbw"] for r in rows if r[backend]["us"]],
                                  marker="o", label=backend)
        axes[0][col].set_title(f"all_reduce float32, {world} ranks ({tag})")
        axes[0][col].set_ylabel("time per call (µs, median of rounds)")
        axes[1][col].set_ylabel("busbw (GB/s) = 2(n-1)/n·bytes/time")
        ticks = [r["bytes"] for r in rows][::2]
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, [human(b).replace(" ", "") for b in ticks])
            ax.set_xlabel("bytes per rank")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def driver(args):
    os.makedirs(args.out, exist_ok=True)
    tag = "allreduce_1host" if not args.hosts2 else \
        "allreduce_2hosts" + (f"_{args.shape}" if args.shape else "")
    logdir = tempfile.mkdtemp(prefix="grove-torch-bench-")
    netns = None
    raw, all_rows, failures, texts = {}, {}, [], []
    ports = itertools.count(29601 + os.getpid() % 1000)
    with jobs.sigterm_exits():
        try:
            if args.hosts2:
                netns = jobs.Namespaces(args.shape)
                netns.open()
                print(f"# two hosts: namespaces {netns.names}, veth {netns.ifaces}, "
                      f"{netns.addrs}, shaping: {args.shape or 'none'}", flush=True)
            for world in args.ranks:
                per_round = jobs.run_rounds(
                    args, world, tag, failures=failures,
                    job=lambda label, backend: run_job(args, backend, world, next(ports), netns,
                                                       logdir, label))
                raw[world] = per_round
                rows = summarize(args, per_round, world)
                all_rows[world] = rows
                counts = ", ".join(f"{b}: {len(per_round[b])}" for b in args.backends)
                mode = ("2 emulated hosts" + (" shaped " + args.shape if args.shape else "")
                        if args.hosts2 else "1 host")
                title = (f"all_reduce float32 SUM, {world} ranks, {mode}, "
                         f"rounds completed ({counts})")
                text = table_text(args, rows, world, title)
                texts.append(text)
                print(text, flush=True)
        finally:
            if netns is not None:
                netns.close()

    if not all_rows:
        return 1
    with open(os.path.join(args.out, tag + ".txt"), "w") as f:
        f.write("\n\n".join(texts) + "\n")
    with open(os.path.join(args.out, tag + ".csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["mode", "ranks", "bytes", "backend", "median_us", "busbw_GBps",
                      "rounds", "rounds_us", f"ratio_vs_{args.backends[0]}", "wrong_results"])
        for world, rows in all_rows.items():
            for row in rows:
                ref = row[args.backends[0]]["us"]
                for backend in args.backends:
                    cell = row[backend]
                    out.writerow([tag, world, row["bytes"], backend,
                                  fmt(cell["us"], ".3f"), fmt(cell["busbw"], ".4f"),
                                  len(cell["rounds_us"]),
                                  ";".join(f"{v:.3f}" for v in cell["rounds_us"]),
                                  fmt(cell["us"] / ref if cell["us"] and ref else None, ".4f"),
                                  cell["wrong"]])
    with open(os.path.join(args.out, tag + ".json"), "w") as f:
        json.dump({"args": {k: v for k, v in vars(args).items()}, "raw": raw,
                   "failures": failures}, f, indent=1)
    plot(os.path.join(args.out, tag + ".png"), tag, all_rows, args.backends)
    return jobs.finish(args.out, f"{tag}.{{txt,csv,json,png}}", logdir, failures)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    jobs.add_round_options(parser, rounds=5)
    parser.add_argument("--min-bytes", type=parse_bytes, default=4)
    parser.add_argument("--max-bytes", type=parse_bytes, default=256 * MiB,
                        help="largest size (e.g. 64M, 1M); sizes go up by 4 from 4 B")
    parser.add_argument("--iters-scale", type=float, default=1.0,
                        help="multiply the calls per sample (k) by this")
    parser.add_argument("--out", default=jobs.RESULTS)
    parser.add_argument("--hosts2", action="store_true",
                        help="run the ranks in two network namespaces (two emulated hosts)")
    parser.add_argument("--shape", default=None,
                        help="with --hosts2: tc tbf rate on each veth, e.g. 1gbit")
    parser.add_argument("--job-timeout", type=float, default=1800,
                        help="seconds one torchrun job may take")
    parser.add_argument("--op-timeout", type=float, default=300,
                        help="the process group's timeout (seconds)")
    jobs.add_worker_options(parser)  # internal: one rank of a job
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    if args.shape and not args.hosts2:
        parser.error("--shape needs --hosts2")
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
