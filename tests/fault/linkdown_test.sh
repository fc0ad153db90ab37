#!/usr/bin/env bash
# linkdown_test.sh FAULT_CHECK [DEADLINE_S] — a host's link goes away in the middle of a
# collective: no process dies, no socket is closed, no RST is ever sent.
#
# Why: a killed peer is noticed at once (the kernel closes its sockets) and a stopped one is
# still reachable; a cable pulled or a switch port gone is neither. Only heartbeats
# (GROVE_HEARTBEAT_TIMEOUT) can find it, on both sides of the cut, and docs/failures.md
# promises that they do: every rank — the cut-off one included — must fail with an error, never
# hang or compute a wrong result, within 2 x GROVE_TIMEOUT, and the error must name the rank
# across the cut ("rank R failed: no heartbeat from rank R ..."). This test makes that happen
# for real on emulated hosts (tests/netns/netns.sh: one network namespace per host, one rank
# each, TCP between them) and reports how long detection took.
#
# Cases, each on fresh namespaces, every rank running fault_check (one collective in a loop,
# every result checked) with GROVE_HEARTBEAT_TIMEOUT=2 and GROVE_TIMEOUT=30:
#   link3      3 hosts, allreduce of 4 MiB, `ip link set eth0 down` on host 1
#   link4      4 hosts, allgather of 4 x 1 MiB, eth0 down on host 2
#   link4root  4 hosts, broadcast of 4 MiB from rank 0, eth0 down on host 0 (the root of the
#              broadcast and the server of the job's store)
#   loss3      3 hosts, allreduce of 4 MiB, host 2 loses every packet while its link stays up:
#              `tc qdisc ... netem loss 100%` on both ends of its cable where the kernel has
#              netem, else its switch port leaves the bridge (the same to both ends: carrier
#              up, nothing arrives)
# The cut comes once every rank printed "ready" (two calls done) plus 50..300 ms, so it falls in
# the middle of the traffic. Asserted per case: every rank exits with fault_check's error status
# (3) and an error line, none with "corrupt", none killed by the per-rank bound; each error came
# at most 2 x GROVE_TIMEOUT after the cut; every other rank's error names the cut-off rank as
# the origin ("rank V failed") and at least one says "no heartbeat from rank V"; the cut-off
# rank's error names some other rank as failed; afterwards no process in the case's
# namespaces, no /dev/shm/grove-<job>-* entry, no namespace of the test. Detection times are
# printed, not asserted (beyond the 2 x bound). Exit 0 = pass, 77 = skipped (no namespaces
# or no python3 here), else failed.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../netns/netns.sh
source "$here/../netns/netns.sh"

(($# >= 1)) || { echo "usage: linkdown_test.sh FAULT_CHECK [DEADLINE_S]" >&2; exit 2; }
check=$1
deadline=$((SECONDS + ${2:-270}))
timeout_s=30   # GROVE_TIMEOUT
heartbeat_s=2  # GROVE_HEARTBEAT_TIMEOUT

netns_require
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found (needed to read CLOCK_MONOTONIC at the cut)"
  exit "$NETNS_SKIP"
fi
if [[ ! -x $check ]]; then
  echo "FAIL: fault_check binary '$check' not found or not executable"
  exit 1
fi
# Launcher variables from the caller's environment would change what the ranks do.
launcher='^(GROVE_.*|RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT)$'
while read -r name; do
  unset "$name"
done < <(compgen -e | grep -E "$launcher|^(OMPI|PMI|PMIX|SLURM)_")
netns_test_begin linkdown  # prefix, work, failures, fail, hex
summary=()

# Runs CMD... and prints CLOCK_MONOTONIC (ns) just before and just after it (the clock
# fault_check stamps its error lines with; namespaces share it); fails if CMD fails. The cut
# takes effect somewhere in between: detection is measured from the first stamp (an upper
# bound), and the gap is reported (a loaded machine can delay the `ip` command).
cut_now() {
  python3 -c 'import subprocess, sys, time
before = time.monotonic_ns()
subprocess.check_call(sys.argv[1:])
print(before, time.monotonic_ns())' "$@"
}

# Whether this kernel has the netem qdisc (probed on a throwaway dummy link of host 0).
have_netem() {
  local host
  host=$(netns_host "$prefix" 0)
  ip -n "$host" link add gvprobe type dummy 2>/dev/null || return 1
  local ok=1
  tc -n "$host" qdisc add dev gvprobe root netem loss 100% 2>/dev/null && ok=0
  ip -n "$host" link del gvprobe 2>/dev/null
  return $ok
}

# Chooses how to cut host VICTIM off the network (HOW: down | loss): sets CUT_HOW (words) and
# CUT_CMD (the command that cuts).
plan_cut() {
  local victim=$1 how=$2 host sw
  host=$(netns_host "$prefix" "$victim")
  sw=${prefix}sw
  if [[ $how == down ]]; then
    CUT_HOW="ip link set eth0 down on host $victim"
    CUT_CMD=(ip -n "$host" link set "$NETNS_DEV" down)
  elif have_netem; then
    CUT_HOW="netem loss 100% on both ends of host $victim's cable"
    # shellcheck disable=SC2016  # expanded by that sh
    CUT_CMD=(sh -c 'tc -n "$1" qdisc replace dev "$2" root netem loss 100% &&
      tc -n "$3" qdisc replace dev "$4" root netem loss 100%' _ "$sw" "p$victim" "$host"
      "$NETNS_DEV")
  else
    CUT_HOW="no netem here: switch port p$victim left the bridge (both ends stay up)"
    CUT_CMD=(ip -n "$sw" link set "p$victim" nomaster)
  fi
}

# cut_case NAME HOSTS VICTIM HOW COLLECTIVE BYTES: see the file comment.
cut_case() {
  local name=$1 hosts=$2 victim=$3 how=$4 collective=$5 bytes=$6
  local limit=$((2 * timeout_s + 15)) jobid secret r _
  if ((deadline - SECONDS < limit + 15)); then
    fail "$name: not started, the test's time is nearly spent"
    return
  fi
  echo "== $name: $hosts hosts x 1 rank, $collective $bytes B, cut host $victim ($how)"
  netns_up "$hosts" "$prefix" || {
    fail "$name: netns_up $hosts $prefix"
    return
  }
  plan_cut "$victim" "$how"
  jobid=$(hex 8)
  secret=$(hex 16)
  local pids=()
  for ((r = 0; r < hosts; r++)); do
    # Through the environment (not argv): the secret never shows in `ps`.
    GROVE_RANK=$r GROVE_WORLD_SIZE=$hosts GROVE_LOCAL_RANK=0 GROVE_LOCAL_SIZE=1 \
      GROVE_ROOT=$(netns_addr 0):29500 GROVE_SECRET=$secret GROVE_JOB_ID=$jobid \
      GROVE_TRANSPORT=tcp GROVE_SOCKET_IFNAME=$NETNS_DEV GROVE_TIMEOUT=$timeout_s \
      GROVE_HEARTBEAT_TIMEOUT=$heartbeat_s \
      netns_spawn "$prefix" "$r" "$work/$name.$r.out" "$work/$name.$r.err" \
      timeout -k 5 "$limit" "$check" "$collective" "$bytes"
    pids+=("$NETNS_LAST_PID")
  done

  # Every rank in its loop (or one gave up: no cut then).
  local ready=0
  for _ in $(seq 300); do
    ready=0
    for ((r = 0; r < hosts; r++)); do
      grep -q '^ready' "$work/$name.$r.out" && ready=$((ready + 1))
    done
    ((ready == hosts)) && break
    local gone=0
    for ((r = 0; r < hosts; r++)); do kill -0 "${pids[r]}" 2>/dev/null || gone=1; done
    ((gone)) && break
    sleep 0.1
  done
  local cut_ns="" cut_end="" stamps
  if ((ready == hosts)); then
    sleep "0.$(printf '%03d' $((50 + RANDOM % 250)))"
    stamps=$(cut_now "${CUT_CMD[@]}")
    if [[ $stamps =~ ^([0-9]+)\ ([0-9]+)$ ]]; then
      cut_ns=${BASH_REMATCH[1]}
      cut_end=${BASH_REMATCH[2]}
    else
      fail "$name: could not cut host $victim ($how): $stamps"
    fi
  else
    fail "$name: only $ready of $hosts ranks got ready"
  fi

  local statuses=()
  for ((r = 0; r < hosts; r++)); do
    wait "${pids[r]}"
    statuses+=($?)
  done
  [[ -n $cut_ns ]] && echo "   cut: $CUT_HOW (the command took $(python3 -c \
    "print('%.3f' % (($cut_end - $cut_ns) / 1e9))") s)"

  local heartbeat_named=0 slowest=0 line code detected message latency who
  for ((r = 0; r < hosts; r++)); do
    who="rank $r$( ((r == victim)) && echo " (cut off)")"
    line=$(grep -E '^error ' "$work/$name.$r.out" | tail -n 1)
    if [[ -z $cut_ns ]]; then
      :
    elif grep -q '^corrupt' "$work/$name.$r.out"; then
      fail "$name: $who computed a wrong result: $(grep '^corrupt' "$work/$name.$r.out")"
    elif ((statuses[r] == 124 || statuses[r] == 137)); then
      fail "$name: $who hung: killed after $limit s"
    elif ((statuses[r] != 3)) || [[ -z $line ]]; then
      fail "$name: $who exited with status ${statuses[r]} and no error line"
    else
      read -r _ _ code detected _ message <<<"$line"
      latency=$(python3 -c "print('%.2f' % (max(0, $detected - $cut_ns) / 1e9))")
      echo "   $who: $code after $latency s: $message"
      if python3 -c "import sys; sys.exit(0 if $latency > 2 * $timeout_s else 1)"; then
        fail "$name: $who needed $latency s (more than 2 x GROVE_TIMEOUT = $((2 * timeout_s)) s)"
      fi
      if ((r != victim)); then
        slowest=$(python3 -c "print(max($slowest, $latency))")
        [[ $message == *"rank $victim failed"* ]] ||
          fail "$name: $who's error does not name rank $victim as the origin: $message"
        [[ $message == *"no heartbeat from rank $victim "* ]] && heartbeat_named=1
      else
        local named
        named=$(grep -oE 'rank [0-9]+ failed' <<<"$message" | grep -vx "rank $victim failed")
        [[ -n $named ]] ||
          fail "$name: the cut-off rank's error names no other rank as failed: $message"
        summary+=("$name: cut-off rank $victim errored after $latency s")
      fi
    fi
    if [[ -n $cut_ns ]] && { ((statuses[r] != 3)) || [[ -z $line ]]; }; then
      tail -n 5 "$work/$name.$r.out" | sed "s/^/    rank $r out: /"
      tail -n 15 "$work/$name.$r.err" | sed "s/^/    rank $r err: /"
    fi
  done
  if [[ -n $cut_ns ]]; then
    ((heartbeat_named)) ||
      fail "$name: no rank's error said 'no heartbeat from rank $victim'"
    summary+=("$name: the other $((hosts - 1)) ranks errored after $slowest s at most ($CUT_HOW)")
  fi

  # Nothing of the job may remain.
  netns_expect_job_gone "$name" "$prefix" "$hosts" "$jobid" "${pids[@]}"
  netns_down "$prefix"
  local left
  left=$(netns_list "$prefix" | xargs)
  [[ -n $left ]] && fail "$name: namespaces left: $left"
}

mib=$((1 << 20))
cut_case link3 3 1 down allreduce $((4 * mib))
cut_case link4 4 2 down allgather $((1 * mib))
cut_case link4root 4 0 down broadcast $((4 * mib))
cut_case loss3 3 2 loss allreduce $((4 * mib))

netns_cleanup
left=$(netns_list "$prefix" | xargs)
[[ -n $left ]] && fail "namespaces left after the test: $left"
echo "linkdown: GROVE_HEARTBEAT_TIMEOUT=$heartbeat_s GROVE_TIMEOUT=$timeout_s"
printf '  %s\n' "${summary[@]}"
if ((failures)); then
  echo "linkdown: $failures failure(s)"
  exit 1
fi
echo "linkdown: passed"
exit 0
