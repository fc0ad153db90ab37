#!/usr/bin/env python3
"""Runs `grove perf` and checks its output the way a user's script would read it.

Why a script: grove perf's contract is its text (nccl-tests' table) and its JSON, so the test
reads them from the outside and recomputes the expected rows from the flags with an
independent copy of nccl-tests' size rules.

Usage:
  check_perf.py GROVE perf COLLECTIVE [FLAGS...]           table and exit status 0
  check_perf.py --json PATH GROVE perf COLLECTIVE [FLAGS...] also -J PATH, checked
  check_perf.py --expect-error REGEX GROVE ARGS...          non-zero exit, REGEX on stderr
"""
import json
import re
import subprocess
import sys

TYPES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2,
         "float": 4, "double": 8, "bfloat16": 2}
TYPE_ALIASES = {"float16": "half", "fp16": "half", "float32": "float", "float64": "double",
                "bf16": "bfloat16", "char": "int8", "int": "int32", "uint": "uint32"}
OPS = ["sum", "prod", "max", "min", "avg"]
REDUCING = {"allreduce", "reduce", "reducescatter"}
ROOTED = {"broadcast", "reduce", "gather", "scatter"}
PER_RANK = {"allgather", "reducescatter", "alltoall", "gather", "scatter"}
COLUMNS = ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
           "algbw", "busbw", "#wrong"]


def fail(message, output=""):
    sys.stderr.write(output)
    sys.stderr.write("\ncheck_perf: FAIL: " + message + "\n")
    sys.exit(1)


def parse_bytes(text):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", text)
    if not m:
        fail("test bug: bad size " + text)
    shift = {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
    return int(m.group(1)) << shift


def parse_flags(args):
    """The subset of grove perf's flags that decides which rows appear."""
    flags = {"collective": args[0], "b": "32M", "e": "32M", "f": "1", "i": "1M", "t": "1",
             "d": "float", "o": "sum", "r": "0", "c": "1", "R": "0"}
    names = {"--minbytes": "b", "--maxbytes": "e", "--stepfactor": "f", "--stepbytes": "i",
             "--nthreads": "t", "--datatype": "d", "--op": "o", "--root": "r", "--check": "c",
             "--registered": "R"}
    i = 1
    while i < len(args):
        a = args[i]
        key = names.get(a, a[1:] if a.startswith("-") and len(a) == 2 else None)
        if key is not None and i + 1 < len(args):
            if key in flags:
                flags[key] = args[i + 1]
            i += 2
        else:
            i += 1
    return flags


def expected_rows(flags):
    coll = flags["collective"]
    n = int(flags["t"])
    lo, hi = parse_bytes(flags["b"]), parse_bytes(flags["e"])
    factor, step = int(flags["f"]), parse_bytes(flags["i"])
    nominal = []
    size = lo
    while size <= hi:
        nominal.append(size)
        size = (1 if size == 0 else size * factor) if factor > 1 else size + step
    types = list(TYPES) if flags["d"] == "all" else [TYPE_ALIASES.get(flags["d"], flags["d"])]
    ops = (OPS if flags["o"] == "all" else [flags["o"]]) if coll in REDUCING else ["none"]
    root = flags["r"] if coll in ROOTED else "-1"
    rows = []
    for t in types:
        width = TYPES[t]
        for op in ops:
            last = None
            for nb in nominal:
                count = nb // width
                if coll in PER_RANK:
                    count //= n
                if count == last:
                    continue
                last = count
                size = count * width * (n if coll in PER_RANK else 1)
                rows.append([str(size), str(count), t, op, root])
    return rows


def bus_factor(coll, n):
    if coll == "allreduce":
        return 2.0 * (n - 1) / n
    if coll in PER_RANK:
        return (n - 1) / n
    return 1.0


def check_table(stdout, flags):
    lines = stdout.splitlines()
    titles = [l for l in lines if l.startswith("#") and "#wrong" in l]
    if len(titles) != 1 or titles[0][1:].split() != COLUMNS:
        fail("column titles missing or wrong", stdout)
    if not any(re.match(r"# nThread %s nGpus 1 minBytes \d+ maxBytes \d+ " % flags["t"], l)
               for l in lines):
        fail("nThread header line missing", stdout)
    if not any(l.startswith("# nThread ") and l.endswith(" registered: %s" % flags["R"])
               for l in lines):
        fail("the nThread header line does not end with 'registered: %s'" % flags["R"], stdout)
    ranks = [l for l in lines if re.match(r"#\s+Rank\s+\d+ Group\s+0 Pid\s+\d+ on .* transport", l)]
    if len(ranks) != int(flags["t"]):
        fail("expected %s '# Rank' lines, found %d" % (flags["t"], len(ranks)), stdout)
    if "# Out of bounds values : 0 OK" not in lines:
        fail("footer '# Out of bounds values : 0 OK' missing", stdout)
    if not any(re.fullmatch(r"# Avg bus bandwidth    : \d+\.\d{3}", l) for l in lines):
        fail("footer '# Avg bus bandwidth' missing", stdout)
    rows = [l.split() for l in lines if l.strip() and not l.startswith("#")]
    expected = expected_rows(flags)
    if len(rows) != len(expected):
        fail("expected %d rows, found %d" % (len(expected), len(rows)), stdout)
    checking = int(flags["c"]) > 0
    factor = bus_factor(flags["collective"], int(flags["t"]))
    for row, want in zip(rows, expected):
        if len(row) != len(COLUMNS):
            fail("row has %d columns, expected %d: %s" % (len(row), len(COLUMNS), row), stdout)
        if row[:5] != want:
            fail("row %s does not start with %s" % (row, want), stdout)
        for base in (5, 9):
            time, algbw, busbw = (float(x) for x in row[base:base + 3])
            if time < 0 or algbw < 0 or abs(busbw - algbw * factor) > 0.011 + 0.01 * busbw:
                fail("bad time/algbw/busbw in row %s" % row, stdout)
            if row[base + 3] != ("0" if checking else "N/A"):
                fail("#wrong is %s in row %s" % (row[base + 3], row), stdout)
    return rows


def check_json(path, rows, flags):
    with open(path) as f:
        report = json.load(f)
    results = report["results"]
    if len(results) != len(rows):
        fail("JSON has %d results, the table %d rows" % (len(results), len(rows)))
    for res, row in zip(results, rows):
        for key in ("collective", "size", "count", "type", "redop", "root", "nranks",
                    "algorithm", "out_of_place", "in_place"):
            if key not in res:
                fail("JSON result lacks '%s': %s" % (key, res))
        if [str(res["size"]), str(res["count"]), res["type"], res["redop"],
                str(res["root"])] != row[:5]:
            fail("JSON result %s differs from row %s" % (res, row))
        if res["collective"] != flags["collective"] or res["nranks"] != int(flags["t"]):
            fail("JSON result has wrong collective or nranks: %s" % res)
        if not res["algorithm"]:
            fail("JSON result names no algorithm: %s" % res)
        for place in ("out_of_place", "in_place"):
            for key in ("time_us", "algbw", "busbw", "wrong"):
                if key not in res[place]:
                    fail("JSON %s lacks '%s': %s" % (place, key, res))
            if res[place]["wrong"] != 0:
                fail("JSON reports wrong values: %s" % res)
    if report["config"].get("registered") != int(flags["R"]):
        fail("JSON config says registered %r, expected %s" % (report["config"].get("registered"),
                                                              flags["R"]))
    summary = report["summary"]
    if summary["out_of_bounds"] != 0 or not summary["ok"] or summary["rows"] != len(rows):
        fail("JSON summary is wrong: %s" % summary)


def main(argv):
    json_path = None
    expect_error = None
    while argv and argv[0].startswith("--"):
        if argv[0] == "--json":
            json_path, argv = argv[1], argv[2:]
        elif argv[0] == "--expect-error":
            expect_error, argv = argv[1], argv[2:]
        else:
            fail("unknown option " + argv[0])
    command = argv + (["-J", json_path] if json_path else [])
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    if expect_error is not None:
        if proc.returncode == 0:
            fail("expected a non-zero exit status", output)
        if not re.search(expect_error, proc.stderr):
            fail("stderr does not match '%s'" % expect_error, output)
        print("ok: exit %d, %s" % (proc.returncode, proc.stderr.strip().splitlines()[0]))
        return
    if proc.returncode != 0:
        fail("exit status %d" % proc.returncode, output)
    if argv[1] != "perf":
        print(proc.stdout)
        return
    flags = parse_flags(argv[2:])
    rows = check_table(proc.stdout, flags)
    if json_path:
        check_json(json_path, rows, flags)
    print("ok: %d rows" % len(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
