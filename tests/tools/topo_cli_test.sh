#!/usr/bin/env bash
# `grove topo` as a script uses it: the exact bounds of a DGX-1V subset from --json (the
# reference table of reference/topologies.md), the text report, the preset list, the link
# table, and errors that name what is wrong (a spec that is neither a preset nor a file, a
# rank out of range, -o without --probe).
#
# Usage: topo_cli_test.sh GROVE_BINARY
set -euo pipefail

grove=$1
die() {
  echo "topo_cli_test: $*" >&2
  exit 1
}

# 1. --json: fractions as strings plus numbers.
json=$("$grove" topo bounds --topo dgx1v:0,3,4,7 --json) || die "topo bounds --json failed"
python3 - "$json" <<'EOF' || die "wrong JSON bounds for dgx1v:0,3,4,7: $json"
import json, sys
b = json.loads(sys.argv[1])
assert b["topology"] == "dgx1v:0,3,4,7", b["topology"]
assert b["ranks"] == 4 and b["unitGBps"] == 25 and b["integral"] is True
assert [r["fraction"] for r in b["lambda"]] == ["3"] * 4, b["lambda"]
assert b["lambdaMin"] == {"exact": True, "fraction": "3", "units": 3.0, "gbps": 75.0}
assert b["rings"] == 2
assert b["sigma"]["fraction"] == "7/3" and abs(b["sigma"]["units"] - 7 / 3) < 1e-12
assert b["rsAg"]["fraction"] == "2" and b["rsAg"]["gbps"] == 50.0
assert b["allreduce"]["fraction"] == "7/3"
assert abs(b["allreduce"]["gbps"] - 175 / 3) < 1e-9
assert b["allreduceCeiling"]["fraction"] == "7/3"
assert b["notes"] == []
EOF

# A switch fabric: no sigma, a note saying why.
json=$("$grove" topo bounds --topo dgx2 --json) || die "topo bounds --topo dgx2 failed"
python3 - "$json" <<'EOF' || die "wrong JSON bounds for dgx2: $json"
import json, sys
b = json.loads(sys.argv[1])
assert b["sigma"] is None and b["rings"] is None
assert b["rsAg"]["fraction"] == "8/15" and abs(b["rsAg"]["gbps"] - 80) < 1e-9
assert any("switch" in note for note in b["notes"])
EOF

# 2. The text report.
text=$("$grove" topo bounds --topo dgx1v) || die "topo bounds --topo dgx1v failed"
grep -q "allreduce (best) *24/7 *85.7143 GB/s" <<<"$text" || die "no 24/7 allreduce line: $text"
grep -q "rings *6" <<<"$text" || die "no rings line: $text"

# 3. Presets and the link table.
"$grove" topo presets | grep -q "dgx1v" || die "topo presets does not list dgx1v"
text=$("$grove" topo --topo dgx1v:0,1,4) || die "topo --topo dgx1v:0,1,4 failed"
grep -q "topology dgx1v:0,1,4: 3 ranks" <<<"$text" || die "no topology header: $text"
grep -Eq "r0 +r2 +50 +2 +1 +nvlink" <<<"$text" || die "no 2-link arc r0→r2: $text"
grep -q "allreduce RS+AG *3/4" <<<"$text" || die "no RS+AG line: $text"
"$grove" topo >/dev/null || die "grove topo (this host) failed"

# 4. Errors.
expect_error() {
  local regex=$1
  shift
  local err
  if err=$("$@" 2>&1 >/dev/null); then die "'$*' succeeded, expected an error"; fi
  grep -Eq -- "$regex" <<<"$err" || die "'$*': stderr '$err' does not match '$regex'"
}
expect_error 'nosuchpreset' "$grove" topo bounds --topo nosuchpreset
expect_error 'dgx1v:0,9' "$grove" topo bounds --topo dgx1v:0,9
expect_error '--topo' "$grove" topo bounds
expect_error 'only goes with --probe' "$grove" topo -o /tmp/x.json
echo "topo_cli_test: ok"
