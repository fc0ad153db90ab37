#!/usr/bin/env bash
# GROVE_TRACE across processes: `grove run -n 2` writes one trace per rank, `grove trace
# merge` joins them (one process per rank), `grove trace summary` reads them.
# Usage: trace_test.sh GROVE_BINARY
set -euo pipefail
grove=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

GROVE_TRACE="$dir/trace-%r.json" "$grove" run -n 2 -- "$grove" perf allreduce -b 4K -e 4K \
  -n 3 -w 1 > "$dir/perf.txt"
test -s "$dir/trace-0.json" && test -s "$dir/trace-1.json"
"$grove" trace merge "$dir/trace-0.json" "$dir/trace-1.json" -o "$dir/all.json"
"$grove" trace summary "$dir/trace-0.json" "$dir/trace-1.json" > "$dir/summary.txt"

python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
merged = json.load(open(f"{d}/all.json"))
events = merged["traceEvents"]
pids = {e["pid"] for e in events if e.get("cat") == "step"}
assert pids == {0, 1}, f"step events of ranks {pids}, expected 0 and 1"
# The measured calls (grove perf also runs small allreduces of its own to agree on results).
calls = [e for e in events if e.get("cat") == "call" and e["name"].startswith("allreduce")
         and e["args"]["bytes"] == 4096]
# At least 1 warm-up + 3 timed iterations per rank (grove perf -n 3 -w 1).
per_rank = {p: sum(1 for e in calls if e["pid"] == p) for p in (0, 1)}
assert per_rank[0] == per_rank[1] and per_rank[0] >= 4, per_rank
for e in calls:
    assert e["args"]["type"] == "float" and e["args"]["op"] == "sum", e
# On two ranks every byte one rank sends the other receives.
def moved(pid, key):
    return sum(e["args"]["bytes"] for e in events
               if e.get("cat") == "step" and e["pid"] == pid and e["args"][key] >= 0)
assert moved(0, "send_to") == moved(1, "recv_from"), (moved(0, "send_to"), moved(1, "recv_from"))
assert moved(1, "send_to") == moved(0, "recv_from")
summary = open(f"{d}/summary.txt").read()
assert "allreduce #" in summary and "waiting(us)" in summary, summary
print("trace_test: ok,", len(events), "events")
PY
if "$grove" trace summary "$dir/missing.json" 2> "$dir/err.txt"; then
  echo "trace_test: summary of a missing file succeeded" >&2; exit 1
fi
grep -q "cannot open trace file" "$dir/err.txt"
