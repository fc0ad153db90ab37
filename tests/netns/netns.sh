#!/usr/bin/env bash
# netns.sh — emulated hosts for grove's multi-host tests, built from Linux network namespaces.
#
# Why: grove counts ranks in one network namespace as one host (shared memory between them)
# and connects ranks of different namespaces over TCP. So a few namespaces behind a bridge are
# "hosts" on one machine, and the multi-host paths (TCP transport, interface choice, rendezvous
# on a non-loopback address, shm+tcp mixes) can be tested anywhere we are root, CI included.
#
# Topology made by `netns_up N PREFIX` (NETNS_LINKS=L, default 1, 1..4: links per host):
#
#   PREFIXsw   switch namespace, bridges br0..br(L-1); br0's ports p0..p(N-1), br<k>'s
#              (k >= 1) ports l<k>p0..l<k>p(N-1)
#   PREFIXh<i> host i: lo up and eth0 = 198.18.0.(i+1)/24, the other end of the veth p<i>;
#              with L > 1 also eth<k> = 198.18.<k>.(i+1)/24, the other end of l<k>p<i>
#
#   PREFIXsw:       br0: p0   p1  ...          br1: l1p0  l1p1  ...    (br1.. with L > 1)
#                        |    |                      |     |
#   PREFIXh0:     eth0 --+    |             eth1 ----+     |
#   PREFIXh1:     eth0 -------+             eth1 ----------+
#
# Each link is a subnet of its own (198.18.<k>.0/24 on bridge br<k>), so traffic to a peer's
# eth<k> address leaves by this host's eth<k>: a rank given several interfaces (a "rail"
# each) is reached over each separately. The addresses come from 198.18.0.0/15 (reserved for
# network benchmarks) and exist only inside these namespaces; nothing is routed anywhere
# else. Every namespace named PREFIX... is ours, so use a prefix unique to the test
# (netns_prefix gives "gvn<pid>").
#
# Sourced (tests): `source netns.sh; netns_check || exit $NETNS_SKIP; netns_up 2 "$p"` then
# `netns_spawn`/`netns_run`. The first netns_up installs traps: on exit, error or
# SIGINT/SIGTERM/SIGHUP, every tracked process and every process still inside our namespaces
# is killed and every namespace this shell created is deleted.
#
# Run as a command (by hand):
#   netns.sh check                     exit 0 if namespaces can be made, else the reason, exit 77
#   netns.sh up N PREFIX [RATE]        create N hosts (RATE: tc tbf shaping of each host link,
#                                      e.g. 1gbit); they stay until `down` (undone on failure);
#                                      NETNS_LINKS=2 netns.sh up N PREFIX [RATE] gives every
#                                      host two links (eth0, eth1), each shaped to RATE
#   netns.sh down PREFIX               kill what runs inside and delete PREFIXsw, PREFIXh*
#   netns.sh run PREFIX HOST CMD...    run CMD inside host HOST (0-based)
#   netns.sh addr HOST [LINK]          print host HOST's address on link LINK (default 0: eth0)

NETNS_SKIP=77                 # exit status of a test that cannot run here (ctest SKIP_RETURN_CODE)
NETNS_SUBNET=198.18.0         # host i is $NETNS_SUBNET.(i+1) (link 0; link k is 198.18.k)
NETNS_DEV=eth0                # the host's interface inside each host namespace (link 0)
: "${NETNS_LINKS:=1}"         # links per host made by netns_up, 1..4 (eth0..eth3)
NETNS_MAX_LINKS=4
NETNS_REASON=""               # why netns_check failed
NETNS_CREATED=()              # namespaces this shell created, deleted by netns_cleanup
NETNS_PIDS=()                 # processes started by netns_spawn
NETNS_TRAPPED=0

netns__log() { echo "netns: $*" >&2; }

# A prefix unique to this shell: gvn<pid>. netns_reap_stale recognises it.
netns_prefix() { echo "gvn$$"; }

# netns_addr HOST [LINK]: host HOST's address on link LINK (default 0).
netns_addr() {
  local link=${2:-0}
  if ((link == 0)); then
    echo "$NETNS_SUBNET.$(($1 + 1))"
  else
    echo "198.18.$link.$(($1 + 1))"
  fi
}
netns_host() { echo "$1h$2"; }
# netns_dev LINK: the host-side interface of link LINK (eth0, eth1, ...).
netns_dev() {
  if ((${1:-0} == 0)); then echo "$NETNS_DEV"; else echo "eth$1"; fi
}
# netns_port HOST LINK: the switch-side end of host HOST's link LINK (p<i>, l<k>p<i>: at most
# 15 characters, the limit on interface names).
netns_port() {
  if ((${2:-0} == 0)); then echo "p$1"; else echo "l$2p$1"; fi
}

# Whether network namespaces can be created here; on failure NETNS_REASON says why.
netns_check() {
  if [[ $(id -u) != 0 ]]; then
    NETNS_REASON="not root (uid $(id -u)): network namespaces need CAP_SYS_ADMIN"
    return 1
  fi
  local tool
  for tool in ip tc; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      NETNS_REASON="'$tool' not found (install iproute2)"
      return 1
    fi
  done
  local probe="gvn$$pr" error
  if ! error=$(ip netns add "$probe" 2>&1); then
    NETNS_REASON="'ip netns add' failed: $error"
    return 1
  fi
  if ! error=$(ip -n "$probe" link add pa type veth peer name pb 2>&1 &&
    ip -n "$probe" link add pbr type bridge 2>&1); then
    ip netns del "$probe" 2>/dev/null
    NETNS_REASON="cannot create veth pairs or bridges in a namespace: $error"
    return 1
  fi
  ip netns del "$probe"
  return 0
}

# Names of the existing namespaces that belong to PREFIX (PREFIXsw, PREFIXh<i>).
netns_list() {
  local name
  ip netns list 2>/dev/null | while read -r name _; do
    [[ $name =~ ^$1(sw|h[0-9]+)$ ]] && echo "$name"
  done
}

# Kills every process inside namespace NS (TERM, then KILL after a grace period) and deletes
# it. Only for namespaces this harness created: whatever runs there was started by us.
netns__delete() {
  local ns=$1 pids _
  mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
  if ((${#pids[@]})); then
    kill -TERM "${pids[@]}" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
      ((${#pids[@]})) || break
      sleep 0.2
    done
    ((${#pids[@]})) && kill -KILL "${pids[@]}" 2>/dev/null
  fi
  ip netns del "$ns" 2>/dev/null
}

# Deletes every namespace of PREFIX (and kills what runs in them).
netns_down() {
  local ns
  for ns in $(netns_list "$1"); do netns__delete "$ns"; done
}

# Deletes namespaces left by an earlier harness shell that died without cleaning up (SIGKILL,
# e.g. a ctest timeout): those named gvn<pid>... whose pid no longer exists.
netns_reap_stale() {
  local name pid
  for name in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $name =~ ^gvn([0-9]+)(sw|h[0-9]+|pr)$ ]] || continue
    pid=${BASH_REMATCH[1]}
    [[ -d /proc/$pid ]] && continue
    netns__log "deleting stale namespace $name (its creator, pid $pid, is gone)"
    netns__delete "$name"
  done
}

# Stops every process started by netns_spawn, then deletes every namespace this shell created.
netns_cleanup() {
  local pid alive=() _
  for pid in "${NETNS_PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null && alive+=("$pid")
  done
  if ((${#alive[@]})); then
    kill -TERM "${alive[@]}" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      local still=()
      for pid in "${alive[@]}"; do kill -0 "$pid" 2>/dev/null && still+=("$pid"); done
      alive=("${still[@]}")
      ((${#alive[@]})) || break
      sleep 0.2
    done
    ((${#alive[@]})) && kill -KILL "${alive[@]}" 2>/dev/null
  fi
  local ns
  for ns in "${NETNS_CREATED[@]}"; do
    ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns" && netns__delete "$ns"
  done
  NETNS_CREATED=()
  # A script that sourced this file may clean up its own things (temporary files) here.
  if declare -F netns_cleanup_hook >/dev/null; then netns_cleanup_hook; fi
}

netns__on_signal() {
  netns__log "received SIG$1: cleaning up"
  netns_cleanup
  trap - EXIT
  exit $((128 + $2))
}

netns__install_traps() {
  ((NETNS_TRAPPED)) && return
  NETNS_TRAPPED=1
  trap 'netns_cleanup' EXIT
  trap 'netns__on_signal INT 2' INT
  trap 'netns__on_signal TERM 15' TERM
  trap 'netns__on_signal HUP 1' HUP
}

netns__add() {
  ip netns add "$1" || return 1
  NETNS_CREATED+=("$1")
}

# tc with up to 3 tries 0.2 s apart, the last error logged: the first tbf on a fresh kernel
# loads its module (the issue's suspect for a one-off netns failure on a new machine; not
# reproduced here), and a failed shaping step fails the whole test.
netns_tc() {
  local _
  for _ in 1 2 3; do
    tc "$@" 2>"${TMPDIR:-/tmp}/netns-tc.$$" && { rm -f "${TMPDIR:-/tmp}/netns-tc.$$"; return 0; }
    sleep 0.2
  done
  netns__log "tc $* failed 3 times: $(cat "${TMPDIR:-/tmp}/netns-tc.$$")"
  rm -f "${TMPDIR:-/tmp}/netns-tc.$$"
  return 1
}

# Shapes both directions of every link of host HOST (eth0 and, where netns_up made them,
# eth1..) with a token bucket (tc tbf) at RATE (tc syntax, e.g. 1gbit, 500mbit). This kernel
# has tbf/htb but no netem: no delay or loss here.
netns_shape() {
  local prefix=$1 host=$2 rate=$3 ns k
  ns=$(netns_host "$prefix" "$host")
  netns__shape_link "$prefix" "$host" 0 "$rate" || return 1
  for ((k = 1; k < NETNS_MAX_LINKS; k++)); do
    ip -n "$ns" link show dev "$(netns_dev "$k")" >/dev/null 2>&1 || continue
    netns__shape_link "$prefix" "$host" "$k" "$rate" || return 1
  done
}

# netns__shape_link PREFIX HOST LINK RATE: both ends of one link.
netns__shape_link() {
  local prefix=$1 host=$2 link=$3 rate=$4
  netns_tc -n "$(netns_host "$prefix" "$host")" qdisc replace dev "$(netns_dev "$link")" root \
    tbf rate "$rate" burst 128kb latency 10ms &&
    netns_tc -n "${prefix}sw" qdisc replace dev "$(netns_port "$host" "$link")" root tbf \
      rate "$rate" burst 128kb latency 10ms
}

# Creates the switch and N hosts with NETNS_LINKS links each (see the file comment); RATE
# optionally shapes every link. Returns non-zero (having deleted what it made) if any step
# fails.
netns_up() {
  local n=$1 prefix=$2 rate=${3:-} links=${NETNS_LINKS:-1}
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 250)); then
    netns__log "up: N must be 1..250, got '$n'"
    return 1
  fi
  if ! [[ $prefix =~ ^[A-Za-z][A-Za-z0-9]{0,15}$ ]]; then
    netns__log "up: PREFIX must be a letter then up to 15 letters or digits, got '$prefix'"
    return 1
  fi
  if ! [[ $links =~ ^[0-9]+$ ]] || ((links < 1 || links > NETNS_MAX_LINKS)); then
    netns__log "up: NETNS_LINKS must be 1..$NETNS_MAX_LINKS, got '$links'"
    return 1
  fi
  if [[ -n $(netns_list "$prefix") ]]; then
    netns__log "up: namespaces with prefix '$prefix' already exist: $(netns_list "$prefix" | xargs)"
    return 1
  fi
  netns__install_traps
  local sw="${prefix}sw" i host
  if ! {
    netns__add "$sw" &&
      ip -n "$sw" link set lo up &&
      netns__bridges "$sw" "$links"
  }; then
    netns__log "up: cannot create the switch namespace $sw"
    netns_cleanup
    return 1
  fi
  for ((i = 0; i < n; i++)); do
    host=$(netns_host "$prefix" "$i")
    if ! {
      netns__add "$host" &&
        ip -n "$host" link set lo up &&
        netns__links "$prefix" "$i" "$links" &&
        { [[ -z $rate ]] || netns_shape "$prefix" "$i" "$rate"; }
    }; then
      netns__log "up: cannot create host $i ($host)"
      netns_cleanup
      return 1
    fi
  done
  return 0
}

# netns__bridges SW L: bridges br0..br(L-1) in the switch namespace SW, up.
netns__bridges() {
  local k
  for ((k = 0; k < $2; k++)); do
    ip -n "$1" link add "br$k" type bridge && ip -n "$1" link set "br$k" up || return 1
  done
}

# netns__links PREFIX HOST L: host HOST's links 0..L-1 (netns__link each).
netns__links() {
  local k
  for ((k = 0; k < $3; k++)); do
    netns__link "$1" "$2" "$k" || return 1
  done
}

# netns__link PREFIX HOST LINK: host HOST's link LINK, a veth eth<LINK> whose other end is a
# port of bridge br<LINK> in the switch, with the address netns_addr HOST LINK, up.
netns__link() {
  local prefix=$1 i=$2 k=$3 host sw="${1}sw" dev port
  host=$(netns_host "$prefix" "$i")
  dev=$(netns_dev "$k")
  port=$(netns_port "$i" "$k")
  ip -n "$host" link add "$dev" type veth peer name "$port" netns "$sw" &&
    ip -n "$sw" link set "$port" master "br$k" &&
    ip -n "$sw" link set "$port" up &&
    ip -n "$host" addr add "$(netns_addr "$i" "$k")/24" dev "$dev" &&
    ip -n "$host" link set "$dev" up
}

# Runs CMD inside host HOST of PREFIX, in the foreground.
netns_run() {
  local prefix=$1 host=$2
  shift 2
  ip netns exec "$(netns_host "$prefix" "$host")" "$@"
}

# Starts CMD inside host HOST in the background, stdout to OUT and stderr to ERR; its pid is
# appended to NETNS_PIDS (stopped by netns_cleanup) and left in NETNS_LAST_PID.
netns_spawn() {
  local prefix=$1 host=$2 out=$3 err=$4
  shift 4
  ip netns exec "$(netns_host "$prefix" "$host")" "$@" >"$out" 2>"$err" </dev/null &
  NETNS_LAST_PID=$!
  NETNS_PIDS+=("$NETNS_LAST_PID")
}

# ---- For test scripts that source this file

# Ends the calling script as skipped (prints "SKIP: <why>", exits $NETNS_SKIP) where network
# namespaces cannot be made here.
netns_require() {
  if ! netns_check; then
    echo "SKIP: $NETNS_REASON"
    exit "$NETNS_SKIP"
  fi
}

# netns_test_begin NAME — the common start of a test script, once its own checks passed:
# deletes the namespaces of dead harness shells (netns_reap_stale), then sets, in the caller's
# shell, `prefix` (this shell's netns_prefix), `work` (a fresh directory grove-NAME.XXXXXX
# under ${TMPDIR:-/tmp}, removed by netns_cleanup through netns_cleanup_hook) and
# `failures=0`, and defines `fail MESSAGE...` (prints "FAIL: MESSAGE" and counts it in
# `failures`) and `hex N` (N random bytes as hex digits: job ids and secrets).
netns_test_begin() {
  netns_reap_stale
  prefix=$(netns_prefix)
  work=$(mktemp -d "${TMPDIR:-/tmp}/grove-$1.XXXXXX")
  # shellcheck disable=SC2317  # called by netns_cleanup
  netns_cleanup_hook() { rm -rf "$work"; }
  failures=0
  # shellcheck disable=SC2317  # fail and hex are called by the test script
  fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
  }
  # shellcheck disable=SC2317
  hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
}

# netns_expect_job_gone NAME PREFIX HOSTS JOBID PID... — after a job on hosts 0..HOSTS-1 of
# PREFIX whose ranks were the processes PID... (rank r the r-th): calls `fail` (defined by
# netns_test_begin) for each rank still running, each host with processes left in it and the
# /dev/shm/grove-JOBID-* entries left behind, which it then removes.
netns_expect_job_gone() {
  local name=$1 prefix=$2 hosts=$3 jobid=$4 r=0 pid h left
  shift 4
  for pid in "$@"; do
    if kill -0 "$pid" 2>/dev/null; then fail "$name: rank $r (pid $pid) still runs"; fi
    r=$((r + 1))
  done
  for ((h = 0; h < hosts; h++)); do
    left=$(ip netns pids "$(netns_host "$prefix" "$h")" 2>/dev/null | xargs)
    if [[ -n $left ]]; then fail "$name: processes left in host $h: $left"; fi
  done
  left=$(compgen -G "/dev/shm/grove-$jobid-*" | xargs)
  if [[ -n $left ]]; then
    fail "$name: shared memory left behind: $left"
    rm -f /dev/shm/grove-"$jobid"-*
  fi
}

netns__main() {
  local command=${1:-}
  shift || true
  case $command in
    check)
      if netns_check; then
        echo "netns: network namespaces are available"
      else
        echo "netns: unavailable: $NETNS_REASON"
        exit $NETNS_SKIP
      fi
      ;;
    up)
      (($# >= 2 && $# <= 3)) || { netns__log "usage: netns.sh up N PREFIX [RATE]"; exit 2; }
      netns_check || { netns__log "unavailable: $NETNS_REASON"; exit $NETNS_SKIP; }
      netns_up "$@" || exit 1
      # Success: the namespaces outlive this command (undone only on failure or signal).
      NETNS_CREATED=()
      trap - EXIT
      echo "netns: hosts $(netns_list "$2" | grep -v 'sw$' | sort -V | xargs) at $NETNS_SUBNET.1..$1/24"
      local k
      for ((k = 1; k < NETNS_LINKS; k++)); do
        echo "netns: link $k: $(netns_dev "$k") at 198.18.$k.1..$1/24 (bridge br$k)"
      done
      ;;
    down)
      (($# == 1)) || { netns__log "usage: netns.sh down PREFIX"; exit 2; }
      netns_down "$1"
      ;;
    run)
      (($# >= 3)) || { netns__log "usage: netns.sh run PREFIX HOST CMD..."; exit 2; }
      local prefix=$1 host=$2
      shift 2
      exec ip netns exec "$(netns_host "$prefix" "$host")" "$@"
      ;;
    addr)
      (($# == 1 || $# == 2)) || { netns__log "usage: netns.sh addr HOST [LINK]"; exit 2; }
      netns_addr "$@"
      ;;
    *)
      sed -n '/^# Run as a command (by hand)/,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
}

# Run as a command (not sourced).
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  netns__main "$@"
fi
