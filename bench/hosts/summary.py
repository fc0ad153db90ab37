#!/usr/bin/env python3
"""bench/hosts/summary.py OUT — the tables and plots of a bench/hosts/run.sh run.

Reads OUT/raw/HxP_LINK_COLL_LIB_rROUND.txt (each an nccl-tests table from grove perf or a
peer driver, -a 3: the slowest rank's time; LINK e.g. 1gbit, mixed, 2x1gbit) and
OUT/streams.txt ("Nhosts_LINK GBITS": link 0's best single-stream rate; on cases with several
links per host also "Nhosts_LINK_eth<k> GBITS": link k's, measured alone), and prints, per
configuration, the per-size medians over the rounds, grove's ratio to each peer and to the
best of them (> 1: grove better; times below 64 KiB, bus bandwidths from there on, as
bench/compare), and grove's busbw as a share of the single-stream rate (with several links,
of their rates summed: what a rank using all of them can reach). Writes OUT/busbw_HxP_LINK_COLL.svg per configuration with bench/compare's
plotter (the table parser, bus factors and plots are that tool's, imported, not copied).
"""
import importlib.machinery
import importlib.util
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
_loader = importlib.machinery.SourceFileLoader("compare", str(ROOT / "bench" / "compare"))
_spec = importlib.util.spec_from_loader("compare", _loader)
compare = importlib.util.module_from_spec(_spec)
_loader.exec_module(compare)

NAME = re.compile(r"^(\d+)x(\d+)_([a-z0-9]+)_([a-z]+)_([a-z]+)_r(\d+)\.txt$")
PEERS = ("openmpi", "gloo")
# grove itself forced to a ring (LIBS=ring): what grove's own choice is measured against on
# the mixed-speed links; grove with compression off (LIBS=plain): what its compressed links
# are measured against. Each a ratio column of its own, left out of xbest.
REFERENCES = ("ring", "plain")


def load(out):
    """samples[(hosts, ppn, link, coll)][lib][size] -> [time_us, ...]; failures listed."""
    samples, failed = {}, []
    for path in sorted((out / "raw").glob("*.txt")):
        m = NAME.match(path.name)
        if not m:
            continue
        hosts, ppn, link, coll, lib, _ = m.groups()
        key = (int(hosts), int(ppn), link, coll)
        try:
            rows = compare.parse_table(path.read_text())
        except ValueError as e:
            failed.append(f"{path.name}: {e}")
            continue
        for size, time_us, wrong_oop, wrong_ip in rows:
            if wrong_oop not in ("0", "N/A") or wrong_ip not in ("0", "N/A"):
                failed.append(f"{path.name}: size {size}: #wrong {wrong_oop}/{wrong_ip}")
            samples.setdefault(key, {}).setdefault(lib, {}).setdefault(size, []).append(time_us)
    return samples, failed


def streams(out):
    rates = {}
    path = out / "streams.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            label, gbits = line.split()
            rates[label] = float(gbits)
    return rates


def link_streams(rates, hosts, link):
    """[(interface, gbits)] of the case's links: eth0 (label Nhosts_LINK), then eth1...."""
    label = f"{hosts}hosts_{link}"
    found = [("eth0", rates[label])] if label in rates else []
    k = 1
    while f"{label}_eth{k}" in rates:
        found.append((f"eth{k}", rates[f"{label}_eth{k}"]))
        k += 1
    return found


def table(key, by_lib, link_rates):
    hosts, ppn, link, coll = key
    ranks = hosts * ppn
    factor = compare.bus_factor(coll, ranks)
    libs = [lib for lib in ("grove",) + PEERS + REFERENCES if lib in by_lib]
    peers = [lib for lib in PEERS if lib in by_lib]
    compared = peers + [lib for lib in REFERENCES if lib in by_lib]
    rounds = max(len(v) for runs in by_lib.values() for v in runs.values())
    stream_gbits = sum(gbits for _, gbits in link_rates)
    stream = stream_gbits / 8 if stream_gbits else None
    if len(link_rates) > 1:
        measured = (", ".join(f"{dev} {gbits / 8:.3f} GB/s" for dev, gbits in link_rates)
                    + f" (each alone; /stream: their sum, {stream:.3f} GB/s)")
    else:
        measured = f"{stream:.3f} GB/s" if stream else "not measured"
    # grove's element type (DATATYPE); the peers' drivers always send float32.
    dtype = os.environ.get("DATATYPE", "float")
    types = "float32" if dtype in ("float", "float32") else f"grove {dtype}, peers float32"
    lines = [f"## {hosts} hosts x {ppn} process(es), link {link}, {coll} {types}, out of place, "
             f"median of {rounds} round(s); single stream {measured}"]
    head = f"{'size':>7} |" + "".join(f" {lib:>8} us {'GB/s':>7} |" for lib in libs)
    head += "".join(f" {'x' + lib[:5]:>7}" for lib in compared) + f" {'xbest':>7} {'/stream':>8}"
    lines += [head, "-" * len(head)]
    series = {lib: [] for lib in libs}
    sizes = sorted({s for runs in by_lib.values() for s in runs})
    for size in sizes:
        med = {lib: statistics.median(by_lib[lib][size]) for lib in libs if size in by_lib[lib]}
        busbw = {lib: size / (t * 1e3) * factor if t > 0 else 0.0 for lib, t in med.items()}
        line = f"{compare.human(size):>7} |"
        for lib in libs:
            if lib in med:
                line += (f" {compare.fmt_num(med[lib], 11)} "
                         f"{compare.fmt_num(busbw[lib], 7, 'busbw')} |")
                series[lib].append((size, busbw[lib]))
            else:
                line += f" {'-':>11} {'-':>7} |"
        ratios = []
        for lib in compared:
            r = None
            if "grove" in med and lib in med:
                r = compare.ratio(size, dict(time_us=med["grove"], busbw=busbw["grove"]),
                                  dict(time_us=med[lib], busbw=busbw[lib]))
            ratios.append(r)
            line += f" {r:>7.2f}" if r else f" {'-':>7}"
        known = [r for lib, r in zip(compared, ratios) if r and lib in peers]
        line += f" {min(known):>7.2f}" if known else f" {'-':>7}"
        share = busbw.get("grove", 0) / stream if stream and "grove" in busbw else None
        line += f" {share:>8.2f}" if share is not None and size >= compare.SMALL else f" {'':>8}"
        lines.append(line)
    return "\n".join(lines), series


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    samples, failed = load(out)
    rates = streams(out)
    for key in sorted(samples):
        hosts, ppn, link, coll = key
        text, series = table(key, samples[key], link_streams(rates, hosts, link))
        print(text + "\n")
        compare.svg_plot(out / f"busbw_{hosts}x{ppn}_{link}_{coll}.svg",
                         f"{coll}, {hosts} hosts x {ppn}, link {link}",
                         ["busbw (GB/s) against size; medians of interleaved rounds"], series)
    for line in failed:
        print(f"FAILED: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
