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
# waits for all. Every rank must exit 0; afterwards nothing of the job may remain. Rank r's
# output is in $work/NAME.r.out / .err; JOB_OUT names rank 0's stdout.
run_job() {
  local name=$1 hosts=$2 per=$3
  shift 3
  local extra=()
  while (($#)) && [[ $1 != -- ]]; do
    extra+=("$1")
    shift
  done
  shift
  local size=$((hosts * per)) port=$((29500 + jobs_run)) jobid secret r rc limit
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
    # The variables go through the environment (not argv): the secret never shows in `ps`.
    GROVE_RANK=$r GROVE_WORLD_SIZE=$size GROVE_LOCAL_RANK=$((r % per)) GROVE_LOCAL_SIZE=$per \
      GROVE_ROOT=$(netns_addr 0):$port GROVE_SECRET=$secret GROVE_JOB_ID=$jobid \
      GROVE_TIMEOUT=60 \
      netns_spawn "$prefix" $((r / per)) "$work/$name.$r.out" "$work/$name.$r.err" \
      env "${extra[@]}" timeout -k 5 "$limit" "$@"
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

# netns.sh itself: what it builds, and that it removes it all on an error and on SIGTERM.
harness_case() {
  netns_up 2 "$prefix" || { fail "netns_up 2 $prefix"; return; }
  [[ $(netns_list "$prefix" | sort | xargs) == "${prefix}h0 ${prefix}h1 ${prefix}sw" ]] ||
    fail "expected namespaces ${prefix}h0 ${prefix}h1 ${prefix}sw, got: $(netns_list "$prefix" | xargs)"
  [[ $(netns_run "$prefix" 1 ip -4 -br addr show dev eth0 | awk '{print $3}') == 198.18.0.2/24 ]] ||
    fail "host 1 does not have 198.18.0.2/24 on eth0"
  [[ -z $(ip -n "${prefix}h0" route show default) ]] || fail "host 0 has a default route"
  # Host 0 reaches host 1 over the bridge: a listener there accepts one connection.
  netns_spawn "$prefix" 1 "$work/listen.out" "$work/listen.err" python3 -c '
import socket
s = socket.create_server(("198.18.0.2", 29400)); c, a = s.accept(); print("from", a[0])'
  local listener=$NETNS_LAST_PID _
  for _ in $(seq 50); do
    netns_run "$prefix" 0 python3 -c '
import socket; socket.create_connection(("198.18.0.2", 29400), timeout=1)' 2>/dev/null && break
    sleep 0.1
  done
  wait "$listener"
  grep -q "from 198.18.0.1" "$work/listen.out" || fail "host 0 could not connect to host 1"
  netns_down "$prefix"
  [[ -z $(netns_list "$prefix") ]] || fail "netns_down left: $(netns_list "$prefix" | xargs)"

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
