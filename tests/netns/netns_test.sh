#!/usr/bin/env bash
# netns_test.sh CASE GROVE [DEADLINE_S] — grove jobs across emulated hosts (network namespaces).
#
# Why: the TCP transport, the rendezvous on a real (non-loopback) address, the interface
# choice (GROVE_SOCKET_IFNAME) and the shm+tcp mix only run when ranks sit on different hosts.
# Each network namespace made by netns.sh is one host to grove, so these tests start every
# rank as its own process inside a namespace, exactly as a launcher on each host would, and
# require every rank to exit 0 (grove perf and process_check check every value they receive).
#
# Cases (one CTest test each):
#   harness  netns.sh itself: topology, isolation, clean-up on error and on SIGTERM
#   hosts2   2 hosts x 1 rank, TCP only, automatic interface choice
#   hosts3   3 hosts x 1 rank (odd), counts 0 and 1 and sizes that do not divide
#   hosts4   4 hosts x 1 rank, GROVE_SOCKET_IFNAME=eth0
#   mixed    2 hosts x 2 ranks: shm inside each host, TCP across (transport "shm+tcp")
#   rails    2 and then 3 hosts x 1 rank, two links per host (NETNS_LINKS=2: eth0 and eth1,
#            each its own subnet and bridge), GROVE_SOCKET_IFNAME=eth0,eth1: each TCP
#            connection stripes its large frames over one socket per interface. A 16 MiB
#            allreduce must send at least a quarter of each host's payload over eth1 (its
#            tx_bytes counter); the usual collectives, counts 0 and 1, sizes that do not divide
#            (16 MiB + 3 bytes), process_check; and a job where only host 1 has both
#            interfaces (eth0 on the others: the rail count falls back to 1), which must pass
#            and leave the eth0-only hosts' eth1 quiet (under 1 MiB sent); and, with eth0
#            shaped to 1 Gbit/s and eth1 to 500 Mbit/s, eth1 must carry 20-45% of a 64 MiB
#            allreduce's bytes (the rates say a third: the split follows them); and the
#            striping again without GROVE_SOCKET_IFNAME (interfaces found and paired with
#            the peers' by subnet), also with one host's eth1 down (no rails to it)
# After every job: no process of it left, no /dev/shm/grove-<job id>-* left; after the test:
# no namespace of its prefix left. process_check (next to GROVE, or $GROVE_PROCESS_CHECK) runs
# too when it has been built. Exit 0 = pass, 77 = skipped (no namespaces here), else failed.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=netns.sh
source "$here/netns.sh"

(($# >= 2)) || { echo "usage: netns_test.sh CASE GROVE [DEADLINE_S]" >&2; exit 2; }
case_name=$1
grove=$2
deadline=$((SECONDS + ${3:-540}))
process_check=${GROVE_PROCESS_CHECK:-$(dirname "$grove")/process_check}

netns_require
if [[ ! -x $grove ]]; then
  echo "FAIL: grove binary '$grove' not found or not executable"
  exit 1
fi
netns_test_begin netns  # prefix, work, failures, fail, hex
jobs_run=0

# run_job NAME HOSTS PER_HOST [VAR=VALUE...] -- CMD...
# Starts HOSTS*PER_HOST ranks, rank r on host r/PER_HOST, each a process of its own in that
# host's namespace with the GROVE_* variables a launcher would set (plus the VAR=VALUEs), and
# waits for all. A VAR=VALUE written hH:VAR=VALUE applies only to the ranks of host H, after
# (so over) the others. Every rank must exit 0; afterwards nothing of the job may remain.
# Rank r's output is in $work/NAME.r.out / .err; JOB_OUT names rank 0's stdout.
run_job() {
  local name=$1 hosts=$2 per=$3
  shift 3
  local extra=() host_extra=()
  while (($#)) && [[ $1 != -- ]]; do
    if [[ $1 =~ ^h([0-9]+):(.+)$ ]]; then
      host_extra+=("${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")
    else
      extra+=("$1")
    fi
    shift
  done
  shift
  local size=$((hosts * per)) port=$((29500 + jobs_run)) jobid secret r rc limit i vars
  jobs_run=$((jobs_run + 1))
  limit=$((deadline - SECONDS - 10))
  if ((limit < 20)); then
    fail "$name: not started, the test's time is nearly spent"
    return
  fi
  ((limit > 180)) && limit=180
  jobid=$(hex 8)
  secret=$(hex 16)
  JOB_OUT=$work/$name.0.out
  local pids=()
  echo "== $name: $hosts hosts x $per ranks: $*"
  for ((r = 0; r < size; r++)); do
    vars=("${extra[@]}")
    for ((i = 0; i < ${#host_extra[@]}; i += 2)); do
      ((host_extra[i] == r / per)) && vars+=("${host_extra[i + 1]}")
    done
    # The variables go through the environment (not argv): the secret never shows in `ps`.
    GROVE_RANK=$r GROVE_WORLD_SIZE=$size GROVE_LOCAL_RANK=$((r % per)) GROVE_LOCAL_SIZE=$per \
      GROVE_ROOT=$(netns_addr 0):$port GROVE_SECRET=$secret GROVE_JOB_ID=$jobid \
      GROVE_TIMEOUT=60 \
      netns_spawn "$prefix" $((r / per)) "$work/$name.$r.out" "$work/$name.$r.err" \
      env "${vars[@]}" timeout -k 5 "$limit" "$@"
    pids+=("$NETNS_LAST_PID")
  done
  for ((r = 0; r < size; r++)); do
    wait "${pids[r]}"
    rc=$?
    if ((rc != 0)); then
      fail "$name: rank $r (host $((r / per))) exited with status $rc$( ((rc == 124)) &&
        echo " (killed after ${limit} s)")"
      sed "s/^/    rank $r err: /" "$work/$name.$r.err" | tail -n 15
      tail -n 5 "$work/$name.$r.out" | sed "s/^/    rank $r out: /"
    fi
  done
  netns_expect_job_gone "$name" "$prefix" "$hosts" "$jobid" "${pids[@]}"
}

# expect_transport NAME SIZE TRANSPORT: rank 0's "# Rank" header lists SIZE ranks, all on it.
expect_transport() {
  local name=$1 size=$2 want=$3 lines
  lines=$(grep -E '^# +Rank +[0-9]+ ' "$JOB_OUT")
  if (($(grep -c . <<<"$lines") != size)); then
    fail "$name: expected $size '# Rank' lines in rank 0's output, got: ${lines:-none}"
  elif grep -qvE "transport $want\$" <<<"$lines"; then
    fail "$name: expected transport $want on every rank, got:"$'\n'"$lines"
  fi
}

# perf_job NAME HOSTS PER_HOST TRANSPORT [VAR=VALUE...] -- PERF ARGS...
perf_job() {
  local name=$1 hosts=$2 per=$3 transport=$4
  shift 4
  local vars=()
  while (($#)) && [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  run_job "$name" "$hosts" "$per" "${vars[@]}" -- "$grove" perf "$@" -t 1
  [[ -s $JOB_OUT ]] && expect_transport "$name" $((hosts * per)) "$transport"
  if ! grep -q '^# Out of bounds values : 0 OK' "$JOB_OUT"; then
    fail "$name: rank 0 did not report '# Out of bounds values : 0 OK'"
  fi
}

# The usual sweep of every kind of collective across HOSTS x PER_HOST ranks.
collectives() {
  local tag=$1 hosts=$2 per=$3 transport=$4
  shift 4
  perf_job "$tag.allreduce" "$hosts" "$per" "$transport" "$@" -- allreduce -b 8 -e 4M -f 16 -n 2 -w 1
  perf_job "$tag.allgather" "$hosts" "$per" "$transport" "$@" -- allgather -b 8 -e 1M -f 16 -n 2 -w 1
  perf_job "$tag.broadcast" "$hosts" "$per" "$transport" "$@" -- broadcast -b 8 -e 1M -f 16 -n 2 -w 1
  perf_job "$tag.reducescatter" "$hosts" "$per" "$transport" "$@" -- \
    reducescatter -b 8 -e 1M -f 16 -n 2 -w 1
  perf_job "$tag.alltoall" "$hosts" "$per" "$transport" "$@" -- alltoall -b 8 -e 256K -f 8 -n 2 -w 1
}

process_check_job() {
  local tag=$1 hosts=$2 per=$3 r
  shift 3
  if [[ ! -x $process_check ]]; then
    echo "== $tag.process_check: $process_check not built, not run"
    return
  fi
  run_job "$tag.process_check" "$hosts" "$per" "$@" -- "$process_check"
  for ((r = 0; r < hosts * per; r++)); do
    if ! grep -q "^rank $r ok" "$work/$tag.process_check.$r.out"; then
      fail "$tag.process_check: rank $r did not print 'rank $r ok'"
    fi
  done
}

# harness_connect ADDR FROM: a listener on ADDR (host 1) accepts one connection from host 0;
# true when it came from address FROM.
harness_connect() {
  local addr=$1 from=$2 listener _
  netns_spawn "$prefix" 1 "$work/listen.out" "$work/listen.err" python3 -c '
import socket, sys
s = socket.create_server((sys.argv[1], 29400)); c, a = s.accept(); print("from", a[0])' "$addr"
  listener=$NETNS_LAST_PID
  for _ in $(seq 50); do
    netns_run "$prefix" 0 python3 -c '
import socket, sys; socket.create_connection((sys.argv[1], 29400), timeout=1)' "$addr" \
      2>/dev/null && break
    sleep 0.1
  done
  wait "$listener"
  grep -qx "from $from" "$work/listen.out"
}

# netns.sh itself: what it builds, and that it removes it all on an error and on SIGTERM.
harness_case() {
  netns_up 2 "$prefix" || { fail "netns_up 2 $prefix"; return; }
  [[ $(netns_list "$prefix" | sort | xargs) == "${prefix}h0 ${prefix}h1 ${prefix}sw" ]] ||
    fail "expected namespaces ${prefix}h0 ${prefix}h1 ${prefix}sw, got: $(netns_list "$prefix" | xargs)"
  [[ $(netns_run "$prefix" 1 ip -4 -br addr show dev eth0 | awk '{print $3}') == 198.18.0.2/24 ]] ||
    fail "host 1 does not have 198.18.0.2/24 on eth0"
  [[ -z $(ip -n "${prefix}h0" route show default) ]] || fail "host 0 has a default route"
  # Host 0 reaches host 1 over the bridge: a listener there accepts one connection.
  harness_connect 198.18.0.2 198.18.0.1 || fail "host 0 could not connect to host 1"
  netns_down "$prefix"
  [[ -z $(netns_list "$prefix") ]] || fail "netns_down left: $(netns_list "$prefix" | xargs)"

  # Two links per host (NETNS_LINKS=2): eth1 on a subnet and bridge of its own, reached from
  # the peer's eth1, shaped at both ends like eth0.
  if NETNS_LINKS=2 netns_up 2 "$prefix" 1gbit; then
    [[ $(netns_run "$prefix" 1 ip -4 -br addr show dev eth1 | awk '{print $3}') == 198.18.1.2/24 ]] ||
      fail "host 1 does not have 198.18.1.2/24 on eth1"
    [[ $(netns_addr 1 1) == 198.18.1.2 && $(netns_addr 1) == 198.18.0.2 ]] ||
      fail "netns_addr 1 1 / netns_addr 1 give $(netns_addr 1 1) / $(netns_addr 1)"
    [[ $(ip -n "${prefix}sw" -o link show dev l1p1 2>/dev/null) == *"master br1"* ]] ||
      fail "the switch has no port l1p1 on bridge br1"
    harness_connect 198.18.1.2 198.18.1.1 || fail "host 0 could not connect to host 1 over eth1"
    tc -n "${prefix}h1" qdisc show dev eth1 | grep -q 'tbf.*rate 1Gbit' ||
      fail "host 1's eth1 is not shaped: $(tc -n "${prefix}h1" qdisc show dev eth1)"
    tc -n "${prefix}sw" qdisc show dev l1p1 | grep -q 'tbf.*rate 1Gbit' ||
      fail "the switch end of host 1's eth1 is not shaped: $(tc -n "${prefix}sw" qdisc show dev l1p1)"
  else
    fail "NETNS_LINKS=2 netns_up 2 $prefix 1gbit"
  fi
  netns_down "$prefix"
  [[ -z $(netns_list "$prefix") ]] || fail "netns_down (2 links) left: $(netns_list "$prefix" | xargs)"
  NETNS_LINKS=5 netns_up 2 "$prefix" 2>/dev/null && fail "NETNS_LINKS=5 was accepted"
  [[ -z $(netns_list "$prefix") ]] || fail "NETNS_LINKS=5 left: $(netns_list "$prefix" | xargs)"

  # An error in a script that sourced netns.sh (set -e): the EXIT trap removes everything.
  bash -c 'set -e; source "$1"; netns_up 2 "$(netns_prefix)"; echo "$(netns_prefix)"; false' \
    _ "$here/netns.sh" >"$work/err.out" 2>&1
  local child
  child=$(head -n 1 "$work/err.out")
  [[ $child == gvn* ]] || fail "the set -e child did not come up: $(cat "$work/err.out")"
  [[ -z $(netns_list "$child") ]] || fail "after an error, left: $(netns_list "$child" | xargs)"

  # A failing step of netns_up (a bad tc rate) undoes what it had made.
  bash -c 'source "$1"; netns_up 2 "$(netns_prefix)" bogusrate && exit 3; echo "$(netns_prefix)"' \
    _ "$here/netns.sh" >"$work/bad.out" 2>&1
  child=$(tail -n 1 "$work/bad.out")
  [[ $child == gvn* ]] || fail "netns_up with a bad rate did not fail: $(cat "$work/bad.out")"
  [[ -z $(netns_list "$child") ]] || fail "failed netns_up left: $(netns_list "$child" | xargs)"

  # SIGTERM while processes run inside the hosts: they are stopped, the namespaces deleted.
  bash -c 'source "$1"; netns_up 3 "$(netns_prefix)" 1gbit || exit 1
    netns_spawn "$(netns_prefix)" 0 /dev/null /dev/null sleep 300
    netns_spawn "$(netns_prefix)" 2 /dev/null /dev/null sleep 300
    echo "${NETNS_PIDS[*]}"; wait' _ "$here/netns.sh" >"$work/term.out" 2>"$work/term.err" &
  local shell=$!
  for _ in $(seq 100); do
    [[ -s $work/term.out ]] && break
    sleep 0.1
  done
  local sleepers
  sleepers=$(cat "$work/term.out")
  [[ -n $sleepers ]] || fail "the SIGTERM child did not come up: $(cat "$work/term.err")"
  [[ $(netns_list "gvn$shell" | wc -l) == 4 ]] ||
    fail "expected 4 namespaces gvn${shell}*, got: $(netns_list "gvn$shell" | xargs)"
  tc -n "gvn${shell}h1" qdisc show dev eth0 | grep -q 'tbf.*rate 1Gbit' ||
    fail "host 1's link is not shaped: $(tc -n "gvn${shell}h1" qdisc show dev eth0)"
  kill -TERM "$shell"
  wait "$shell"
  local rc=$? pid
  ((rc == 143)) || fail "the SIGTERM child exited with $rc, expected 143"
  [[ -z $(netns_list "gvn$shell") ]] || fail "after SIGTERM, left: $(netns_list "gvn$shell" | xargs)"
  for pid in $sleepers; do
    kill -0 "$pid" 2>/dev/null && fail "after SIGTERM, process $pid still runs"
  done
}

# ---- rails: one TCP connection striped over several interfaces (GROVE_SOCKET_IFNAME=eth0,eth1)

# tx_bytes HOST DEV: the bytes host HOST has sent on DEV so far (its namespace's counter).
tx_bytes() {
  ip netns exec "$(netns_host "$prefix" "$1")" cat "/sys/class/net/$2/statistics/tx_bytes"
}

# tx_snapshot HOSTS ARRAY: ARRAY[2h] and ARRAY[2h+1] = host h's eth0 and eth1 tx bytes.
tx_snapshot() {
  local hosts=$1 h
  local -n snap=$2
  snap=()
  for ((h = 0; h < hosts; h++)); do
    snap+=("$(tx_bytes "$h" eth0)" "$(tx_bytes "$h" eth1)")
  done
}

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# rails_striped TAG HOSTS SIZE ITERS WARMUP [IFNAME]: an allreduce of SIZE bytes over every
# host's two interfaces, which must send at least a quarter of each host's payload over eth1;
# GROVE_SOCKET_IFNAME=IFNAME (default eth0,eth1; empty: found by the transport itself). The
# payload: grove perf -b SIZE -e SIZE -n ITERS -w WARMUP -c 1 makes 2*WARMUP warm-up calls
# (at the largest and the smallest size, both SIZE) and, out of place and in place, one
# untimed call, ITERS timed and 1 checking call: CALLS = 2*WARMUP + 2*(ITERS + 2). Each
# call makes every rank send at least SIZE bytes whatever the algorithm (every element of its
# input must reach the others: a 2-rank ring sends SIZE, a 3-rank ring 4/3 SIZE), and
# GROVE_COMPRESS=off with random values keeps them that size on the wire. Striped evenly over
# 2 rails eth1 carries about half; a transport that keeps to eth0 leaves it near 0.
rails_striped() {
  local tag=$1 hosts=$2 size=$3 iters=$4 warmup=$5 ifname=${6-eth0,eth1} h d0 d1
  local calls=$((2 * warmup + 2 * (iters + 2)))
  local payload=$((calls * size))
  local before=() after=()
  tx_snapshot "$hosts" before
  perf_job "$tag.allreduce_striped" "$hosts" 1 tcp "GROVE_SOCKET_IFNAME=$ifname" \
    GROVE_COMPRESS=off -- allreduce -b "$size" -e "$size" -n "$iters" -w "$warmup" -c 1 \
    --fill random
  tx_snapshot "$hosts" after
  for ((h = 0; h < hosts; h++)); do
    d0=$((after[2 * h] - before[2 * h]))
    d1=$((after[2 * h + 1] - before[2 * h + 1]))
    echo "   host $h sent $(mib "$d0") on eth0, $(mib "$d1") on eth1 (payload at least" \
      "$(mib "$payload") in $calls calls; eth1 must carry $(mib $((payload / 4))))"
    ((d1 >= payload / 4)) ||
      fail "$tag.allreduce_striped: host $h sent only $(mib "$d1") on eth1 (eth0: $(mib "$d0")):" \
        "expected at least a quarter of its $(mib "$payload") payload, striped over eth0,eth1" \
        "(GROVE_SOCKET_IFNAME='$ifname')"
  done
}

# rails_proportional TAG: on the 2 hosts up now, eth0 shaped to 1 Gbit/s and eth1 to 500 Mbit/s
# at both ends: the shares must follow the links' rates (eth1 about a third of what both carry),
# not split evenly (a half) and not run away to one link. 64 MiB calls, so the split settles.
rails_proportional() {
  local tag=$1 h d0 d1 share
  local before=() after=()
  for h in 0 1; do
    netns__shape_link "$prefix" "$h" 0 1gbit && netns__shape_link "$prefix" "$h" 1 500mbit ||
      { fail "$tag.proportional: cannot shape host $h's links"; return; }
  done
  tx_snapshot 2 before
  perf_job "$tag.proportional" 2 1 tcp GROVE_SOCKET_IFNAME=eth0,eth1 GROVE_COMPRESS=off -- \
    allreduce -b 64M -e 64M -n 4 -w 1 -c 1 --fill random
  tx_snapshot 2 after
  for h in 0 1; do
    d0=$((after[2 * h] - before[2 * h]))
    d1=$((after[2 * h + 1] - before[2 * h + 1]))
    share=$((100 * d1 / (d0 + d1 + 1)))
    echo "   host $h sent $(mib "$d0") on eth0 (1 Gbit/s), $(mib "$d1") on eth1 (500 Mbit/s):" \
      "eth1 carried ${share}% (rates say 33%; must be 20-45%)"
    ((share >= 20 && share <= 45)) ||
      fail "$tag.proportional: host $h's eth1 carried ${share}% of its bytes, expected 20-45%" \
        "(its rate's third of both links)"
  done
}

# rails_fallback TAG HOSTS BOTH: only host BOTH is given both interfaces, the others eth0: the
# connections fall back to the smaller rail count (1), the job passes, and the eth0-only hosts
# send (next to) nothing on eth1: under 1 MiB, against at least 16 MiB of payload per call.
rails_fallback() {
  local tag=$1 hosts=$2 both=$3 h d1 bound=$((1 << 20))
  local before=() after=()
  tx_snapshot "$hosts" before
  perf_job "$tag.fallback" "$hosts" 1 tcp GROVE_SOCKET_IFNAME=eth0 \
    "h$both:GROVE_SOCKET_IFNAME=eth0,eth1" GROVE_COMPRESS=off -- \
    allreduce -b 4K -e 16M -f 64 -n 2 -w 1 -c 1 --fill random
  tx_snapshot "$hosts" after
  for ((h = 0; h < hosts; h++)); do
    d1=$((after[2 * h + 1] - before[2 * h + 1]))
    if ((h == both)); then
      echo "   host $h (eth0,eth1) sent $(mib "$d1") on eth1"
      continue
    fi
    echo "   host $h (eth0 only) sent $(mib "$d1") on eth1 (must stay under $(mib "$bound"))"
    ((d1 < bound)) ||
      fail "$tag.fallback: host $h, given only eth0, sent $(mib "$d1") on eth1"
  done
}

# rails_found_partial TAG: 3 hosts up with two links, host 1's eth1 taken down, no
# GROVE_SOCKET_IFNAME: hosts 0 and 2 find eth1 and host 1 does not, so connections to and
# from host 1 get no rail (no peer address on a subnet they share) while 0 <-> 2 keep theirs.
# The job must pass with exact results, and host 1 sends nothing on eth1.
rails_found_partial() {
  local tag=$1 d1
  local before=() after=()
  ip -n "$(netns_host "$prefix" 1)" link set eth1 down ||
    { fail "$tag.found_partial: cannot take host 1's eth1 down"; return; }
  tx_snapshot 3 before
  perf_job "$tag.found_partial" 3 1 tcp GROVE_SOCKET_IFNAME= GROVE_COMPRESS=off -- \
    allreduce -b 4K -e 16M -f 64 -n 2 -w 1 -c 1 --fill random
  tx_snapshot 3 after
  d1=$((after[3] - before[3]))
  echo "   host 1 (eth1 down) sent $(mib "$d1") on eth1; hosts 0 and 2:" \
    "$(mib $((after[1] - before[1]))), $(mib $((after[5] - before[5])))"
  ((d1 == 0)) || fail "$tag.found_partial: host 1 sent $(mib "$d1") on its downed eth1"
  ip -n "$(netns_host "$prefix" 1)" link set eth1 up
}

# compression_gain_logged TAG: GROVE_COMPRESS=on across the 2 hosts up now, 2 ranks each (so
# the ranks build the hosts' topology), their NICs said to be 1 Gbit/s: at GROVE_DEBUG=INFO
# every rank logs the chosen plan's predicted times compressed and raw, their quotient as the
# gain, bfloat16's nominal ratio 1.5, and the codec's rate it measured; with a codec of at
# least 0.5 GB/s per end (a release build; sanitizers slow it far more) the gain is above 1.
# The results are exact.
compression_gain_logged() {
  local tag=$1 r line fields
  perf_job "$tag.compression_gain" 2 2 'shm\+tcp' GROVE_COMPRESS=on GROVE_NIC_SPEED=1000 \
    GROVE_DEBUG=INFO -- allreduce -b 1M -e 1M -n 1 -w 0 -d bfloat16 --fill gaussian
  for r in 0 1 2 3; do
    line=$(grep -m1 'GROVE INFO compression: allreduce count 524288 bfloat16 (' \
      "$work/$tag.compression_gain.$r.err")
    echo "   rank $r: ${line#*GROVE INFO }"
    # "predicted C us, R us raw, gain Gx (ratio Q, ...; the codec S GB/s per end, ..."
    fields=$(sed -n 's/.* predicted \([0-9.]*\) us, \([0-9.]*\) us raw, gain \([0-9.]*\)x (ratio \([0-9.]*\),.* the codec \([0-9.]*\) GB\/s per end.*/\1 \2 \3 \4 \5/p' <<<"$line")
    # shellcheck disable=SC2086
    [[ -n $fields ]] && awk -v f="$fields" 'BEGIN {
        split(f, v, " "); gain = v[2] / v[1]
        exit !(v[4] == 1.5 && v[3] - gain < 0.006 && gain - v[3] < 0.006 &&
               (v[5] < 0.5 || v[3] > 1.0)) }' ||
      fail "$tag.compression_gain: rank $r logged no consistent predicted gain (got '${line}')"
  done
}

case $case_name in
  harness)
    harness_case
    ;;
  hosts2)
    netns_up 2 "$prefix" || exit 1
    collectives hosts2 2 1 tcp
    process_check_job hosts2 2 1
    ;;
  hosts3)
    netns_up 3 "$prefix" || exit 1
    perf_job hosts3.allreduce_sizes 3 1 tcp -- allreduce -b 0 -e 100 -i 7 -n 1 -w 0 -d all -o all
    perf_job hosts3.reducescatter_sizes 3 1 tcp -- reducescatter -b 0 -e 100 -i 7 -n 1 -w 0 -d int32
    perf_job hosts3.allgather_sizes 3 1 tcp -- allgather -b 0 -e 100 -i 7 -n 1 -w 0 -d uint8
    perf_job hosts3.broadcast_root 3 1 tcp -- broadcast -r 2 -b 1 -e 1M -f 32 -n 2 -w 1 -d uint8
    perf_job hosts3.reduce_root 3 1 tcp -- reduce -r 1 -b 4 -e 1M -f 32 -n 2 -w 1
    perf_job hosts3.alltoall 3 1 tcp -- alltoall -b 0 -e 300 -i 24 -n 1 -w 0
    process_check_job hosts3 3 1
    ;;
  hosts4)
    netns_up 4 "$prefix" || exit 1
    collectives hosts4 4 1 tcp GROVE_SOCKET_IFNAME=eth0
    process_check_job hosts4 4 1 GROVE_SOCKET_IFNAME=eth0
    ;;
  mixed)
    netns_up 2 "$prefix" || exit 1
    collectives mixed 2 2 'shm\+tcp' GROVE_SOCKET_IFNAME==eth0
    process_check_job mixed 2 2 GROVE_SOCKET_IFNAME==eth0
    compression_gain_logged mixed
    ;;
  rails)
    rails=GROVE_SOCKET_IFNAME=eth0,eth1
    NETNS_LINKS=2 netns_up 2 "$prefix" || exit 1
    rails_striped rails2 2 $((16 << 20)) 3 1
    # No GROVE_SOCKET_IFNAME: the transport finds eth1 and pairs it with the peer's by subnet.
    rails_striped rails2.found 2 $((16 << 20)) 3 1 ""
    perf_job rails2.found_sizes 2 1 tcp GROVE_SOCKET_IFNAME= -- \
      allreduce -b 0 -e 100 -i 7 -n 1 -w 0 -d all -o all
    collectives rails2 2 1 tcp "$rails"
    perf_job rails2.allreduce_sizes 2 1 tcp "$rails" -- \
      allreduce -b 0 -e 100 -i 7 -n 1 -w 0 -d all -o all
    # An odd byte count: frames that do not split evenly over two rails.
    perf_job rails2.allreduce_odd 2 1 tcp "$rails" -- \
      allreduce -b $(((16 << 20) + 3)) -e $(((16 << 20) + 3)) -n 1 -w 0 -d uint8
    process_check_job rails2 2 1 "$rails"
    rails_proportional rails2
    netns_down "$prefix"
    NETNS_LINKS=2 netns_up 3 "$prefix" || exit 1
    rails_striped rails3 3 $((16 << 20)) 3 1
    perf_job rails3.allreduce_sizes 3 1 tcp "$rails" -- \
      allreduce -b 0 -e 100 -i 7 -n 1 -w 0 -d all -o all
    perf_job rails3.allreduce_odd 3 1 tcp "$rails" -- \
      allreduce -b $(((16 << 20) + 7)) -e $(((16 << 20) + 7)) -n 1 -w 0 -d uint8
    perf_job rails3.reducescatter_sizes 3 1 tcp "$rails" -- \
      reducescatter -b 0 -e 100 -i 7 -n 1 -w 0 -d int32
    perf_job rails3.allgather_sizes 3 1 tcp "$rails" -- \
      allgather -b 0 -e 100 -i 7 -n 1 -w 0 -d uint8
    perf_job rails3.broadcast_root 3 1 tcp "$rails" -- \
      broadcast -r 2 -b 1 -e 32M -f 32 -n 2 -w 1 -d uint8
    rails_fallback rails3 3 1
    rails_found_partial rails3
    process_check_job rails3 3 1 "$rails"
    ;;
  *)
    echo "netns_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

netns_cleanup
left=$(netns_list "$prefix" | xargs)
[[ -n $left ]] && fail "namespaces left after the test: $left"
if ((failures)); then
  echo "$case_name: $failures failure(s)"
  exit 1
fi
echo "$case_name: passed ($jobs_run jobs)"
exit 0
