#!/usr/bin/env bash
# bench/hosts/run.sh — grove, Open MPI and Gloo across emulated hosts, side by side.
#
# Why: across hosts what users compare is the library they run today over the same wire. This
# builds emulated hosts (network namespaces behind a bridge, tests/netns/netns.sh), measures
# the link's single-stream rate (bench/hosts/stream.py), then runs each library's size sweep
# once per round, interleaved in an order rotated every round, and prints per-size medians
# and ratios (bench/hosts/summary.py). Needs root.
#
#   grove    one process per rank, started in its host's namespace with the variables a
#            launcher sets; shared memory inside a host, TCP across (chosen by grove itself);
#            on two-link cases GROVE_SOCKET_IFNAME=eth0,eth1: each TCP connection stripes its
#            large frames over one socket per interface
#   openmpi  mpirun.openmpi in host 0's namespace, remote ranks started through
#            netns_agent.sh (--mca plm_rsh_agent); btl self,vader,tcp: shared memory inside a
#            host, TCP across; --bind-to none (the emulated hosts share the machine's cores);
#            on two-link cases --mca btl_tcp_if_include eth0,eth1 (its TCP BTL stripes a
#            message over all of a peer's interfaces itself), the out-of-band channel on eth0
#   gloo     bench/peers/gloo_perf per rank in its namespace, FileStore rendezvous, TCP
#            everywhere (Gloo has no shared-memory transport); always on eth0, two-link cases
#            included: its TCP transport binds one address per rank (GLOO_SOCKET_ADDR), so it
#            cannot use a second link
#
# Usage: bench/hosts/run.sh [--full]
#   default  2 hosts x 1 process, links unshaped and 1gbit, allreduce, 8 B .. 64 MiB, 3 rounds
#   --full   the whole matrix: 2 and 4 hosts, 1 and 2 processes per host, links unshaped,
#            10gbit, 1gbit and mixed (host 0 at 1gbit, the others 10gbit), allreduce,
#            allgather, reducescatter and broadcast, 8 B .. 256 MiB (hours on 2 cores)
#   two links per host, in neither default (name them in LINKS, e.g. LINKS="1gbit 2x1gbit"):
#            2x1gbit     eth0 and eth1 per host (NETNS_LINKS=2), each shaped to 1 Gbit/s
#            2xunshaped  eth0 and eth1 per host, unshaped
#            (NxRATE in general: N = 1..4 links per host, each shaped to RATE; not Nxmixed)
# Environment (each overrides the choice above): HOSTS ("2 4"), PPN ("1 2"), LINKS ("unshaped
# 1gbit 10gbit mixed", or others: 2x1gbit, 2xunshaped, a tc rate), COLLECTIVES, BEGIN (8),
# END (64M), FACTOR (8), ROUNDS (3), ITERS (20), WARMUP (5), LIBS ("grove openmpi gloo"; "ring" adds grove forced to a ring, "plain" grove
# with GROVE_COMPRESS=off), DATATYPE (grove's: float; the peers always send float32), FILL
# (what grove's timed calls send: gaussian, random or pattern, grove perf --fill), GROVE
# (build/bin/grove), OUT (build/hosts/DATE), NIC_SPEED (told, or measured: GROVE_NIC_SPEED=0,
# see nic_speed). grove's ranks get GROVE_NIC_SPEED of their
# host's shaped rate, all its links together (nic_speed: 2000 for 2x1gbit), so its topology
# knows the slow host of the mixed case and GROVE_COMPRESS=auto compresses the 1gbit links;
# its timed calls send Gaussian values (grove perf --fill gaussian), which compress as
# gradients do, not the checks' small integers.
# Output: OUT/raw/* (every run), OUT/streams.txt (link 0's single-stream rate per case, and
# on two-link cases link 1's measured alone), OUT/summary.txt and the plots (summary.py).
# The run_LIBRARY functions are called as "run_$lib".
# shellcheck disable=SC2317
set -u

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$root/bench/hosts
# shellcheck source=../../tests/netns/netns.sh
source "$root/tests/netns/netns.sh"

full=0
[[ ${1:-} == --full ]] && full=1
if ((full)); then
  : "${HOSTS:=2 4}" "${PPN:=1 2}" "${LINKS:=unshaped 10gbit 1gbit mixed}"
  : "${COLLECTIVES:=allreduce allgather reducescatter broadcast}" "${END:=256M}"
else
  : "${HOSTS:=2}" "${PPN:=1}" "${LINKS:=unshaped 1gbit}" "${COLLECTIVES:=allreduce}" "${END:=64M}"
fi
: "${BEGIN:=8}" "${FACTOR:=8}" "${ROUNDS:=3}" "${ITERS:=20}" "${WARMUP:=5}"
: "${LIBS:=grove openmpi gloo}" "${DATATYPE:=float}" "${FILL:=gaussian}"
grove=${GROVE:-$root/build/bin/grove}
out=${OUT:-$root/build/hosts/$(date +%Y%m%d-%H%M%S)}
peers=$root/build/bench/peers

if ! netns_check; then
  echo "bench/hosts: cannot make network namespaces here: $NETNS_REASON" >&2
  exit "$NETNS_SKIP"
fi
[[ -x $grove ]] || { echo "bench/hosts: grove binary '$grove' not found (run make)" >&2; exit 1; }
# The peer drivers, rebuilt when their sources changed: a stale driver would measure old code.
"$root/bench/peers/build.sh" >&2 || { echo "bench/hosts: bench/peers/build.sh failed" >&2; exit 1; }
mkdir -p "$out/raw"
netns_reap_stale
prefix=$(netns_prefix)
stores=$(mktemp -d "${TMPDIR:-/tmp}/grove-hosts.XXXXXX")
# shellcheck disable=SC2317  # called by netns_cleanup
netns_cleanup_hook() { rm -rf "$stores"; }
export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736
perf_args=(-b "$BEGIN" -e "$END" -f "$FACTOR" -n "$ITERS" -w "$WARMUP" -a 3 -c 1)

hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# finish_ranks FILE N PID...: waits for the N ranks, keeps rank 0's output as FILE (and every
# rank's stderr as FILE.R.err when any failed); non-zero when any failed.
finish_ranks() {
  local file=$1 n=$2 status=0 pid r
  shift 2
  for pid in "$@"; do wait "$pid" || status=1; done
  mv "$file.0" "$file"
  for ((r = 1; r < n; r++)); do rm -f "$file.$r"; done
  ((status == 0)) && rm -f "$file".*.err
  return $status
}

# nic_speed HOST: the Mbit/s host HOST's links are shaped to in the current case ($link), all
# of them together ($links of them: 2000 for 2x1gbit), as its GROVE_NIC_SPEED: what an
# operator sets on a cluster whose NICs differ (docs/topology.md); 0 (the default rate) when
# unshaped.
nic_speed() {
  local one
  # NIC_SPEED=measured: nobody tells grove the rate; GROVE_COMPRESS=auto goes by what the TCP
  # transport measures (the veths report no line rate).
  if [[ ${NIC_SPEED:-told} == measured ]]; then
    echo 0
    return
  fi
  case $link_rate in
    1gbit) one=1000 ;;
    10gbit) one=10000 ;;
    mixed) if (($1 == 0)); then one=1000; else one=10000; fi ;;
    *) one=0 ;;
  esac
  echo $((one * links))
}

# link_case LINK: sets links (links per host: 2 for 2x..., else 1) and link_rate (the rate
# of each: the name without its "2x", e.g. 1gbit, unshaped, mixed).
link_case() {
  if [[ $1 =~ ^([1-4])x(.+)$ ]]; then
    links=${BASH_REMATCH[1]}
    link_rate=${BASH_REMATCH[2]}
  else
    links=1
    link_rate=$1
  fi
}

# The host interfaces of the current case, comma-separated: eth0 or eth0,eth1.
link_devs() {
  local k devs=$NETNS_DEV
  for ((k = 1; k < links; k++)); do devs+=",$(netns_dev "$k")"; done
  echo "$devs"
}

# run_grove HOSTS PPN COLL OUTFILE: every rank a process in its host's namespace.
run_grove() {
  local ppn=$2 coll=$3 file=$4 n=$(($1 * $2)) r pids=()
  local job secret ifname=()
  job=$(hex 8)
  secret=$(hex 16)
  # One link: grove's automatic choice, as before; several: every one of them (rails).
  ((links > 1)) && ifname=(GROVE_SOCKET_IFNAME="$(link_devs)")
  for ((r = 0; r < n; r++)); do
    GROVE_NIC_SPEED=$(nic_speed $((r / ppn))) GROVE_COMPRESS=${grove_compress:-auto} \
      GROVE_RANK=$r GROVE_WORLD_SIZE=$n GROVE_ROOT=$(netns_addr 0):29500 \
      GROVE_SECRET=$secret GROVE_JOB_ID=$job netns_spawn "$prefix" $((r / ppn)) \
      "$file.$r" "$file.$r.err" env "${ifname[@]}" timeout -k 5 1800 "$grove" perf "$coll" \
      -t 1 "${perf_args[@]}" -d "$DATATYPE" --fill "$FILL"
    pids+=("$NETNS_LAST_PID")
  done
  finish_ranks "$file" "$n" "${pids[@]}"
}

# run_ring HOSTS PPN COLL OUTFILE: grove forced to a ring (-A ring), the reference grove's own
# choice is compared with on the mixed links.
run_ring() {
  local saved=("${perf_args[@]}") status=0
  perf_args+=(-A ring)
  run_grove "$@" || status=1
  perf_args=("${saved[@]}")
  return $status
}

# run_plain HOSTS PPN COLL OUTFILE: grove with compression off (GROVE_COMPRESS=off), the
# reference its compressed links are compared with.
run_plain() {
  grove_compress=off run_grove "$@"
}

# run_openmpi HOSTS PPN COLL OUTFILE
run_openmpi() {
  local hosts=$1 ppn=$2 coll=$3 file=$4 h list=() map=()
  for ((h = 0; h < hosts; h++)); do
    list+=("$(netns_addr "$h"):$ppn")
    map+=("$(netns_addr "$h")=$(netns_host "$prefix" "$h")")
  done
  NETNS_AGENT_MAP=$(IFS=,; echo "${map[*]}") netns_run "$prefix" 0 timeout -k 5 1800 \
    mpirun.openmpi --allow-run-as-root --oversubscribe -np $((hosts * ppn)) \
    -H "$(IFS=,; echo "${list[*]}")" --mca plm_rsh_agent "$here/netns_agent.sh" \
    --mca plm_rsh_no_tree_spawn 1 --bind-to none \
    --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none \
    --mca btl_tcp_if_include "$(link_devs)" --mca oob_tcp_if_include "$NETNS_DEV" \
    -x MALLOC_MMAP_MAX_ -x MALLOC_TRIM_THRESHOLD_ \
    "$peers/mpi_perf_openmpi" "$coll" "${perf_args[@]}" >"$file" 2>"$file.err" &&
    rm -f "$file.err"
}

# run_gloo HOSTS PPN COLL OUTFILE: on eth0 (link 0) in every case, see the file comment.
run_gloo() {
  local ppn=$2 coll=$3 file=$4 n=$(($1 * $2)) r pids=() status=0 store
  store=$(mktemp -d "$stores/gloo.XXXXXX")
  for ((r = 0; r < n; r++)); do
    GROVE_RANK=$r GROVE_WORLD_SIZE=$n GLOO_PREFIX=hosts$$ \
      GLOO_SOCKET_ADDR=$(netns_addr $((r / ppn))) netns_spawn "$prefix" $((r / ppn)) \
      "$file.$r" "$file.$r.err" timeout -k 5 1800 "$peers/gloo_perf" "$coll" "${perf_args[@]}" \
      --store "$store"
    pids+=("$NETNS_LAST_PID")
  done
  finish_ranks "$file" "$n" "${pids[@]}" || status=1
  rm -rf "$store"
  return $status
}

# The link's single-stream rate, host 0 -> host 1 (3 runs of 512 MiB; the best counts):
# "LABEL GBITS" for link 0 (eth0) and, on a case with more links, "LABEL_eth<k> GBITS" for
# link k measured alone (one stream to host 1's address on that link, nothing else running).
measure_stream() {
  local label=$1 k
  measure_stream_link "$label" 0
  for ((k = 1; k < links; k++)); do measure_stream_link "${label}_$(netns_dev "$k")" "$k"; done
}

measure_stream_link() {
  local label=$1 addr run best=0 result
  addr=$(netns_addr 1 "$2")
  for run in 1 2 3; do
    netns_spawn "$prefix" 1 "$stores/stream.$run" /dev/null \
      python3 "$here/stream.py" recv "$addr" 5201
    local receiver=$NETNS_LAST_PID
    netns_run "$prefix" 0 python3 "$here/stream.py" send "$addr" 5201 512
    wait "$receiver"
    read -r _ _ result <"$stores/stream.$run"
    best=$(awk "BEGIN{print ($result > $best) ? $result : $best}")
  done
  echo "$label $best" | tee -a "$out/streams.txt"
}

# Every link case known before the first is run.
for link in $LINKS; do
  link_case "$link"
  if [[ $link_rate == mixed ]] && ((links > 1)); then
    echo "bench/hosts: link case '$link': mixed has one link per host" >&2
    exit 2
  fi
done

status=0
for hosts in $HOSTS; do
  for link in $LINKS; do
    link_case "$link"  # links, link_rate
    rate=$link_rate
    [[ $link_rate == unshaped || $link_rate == mixed ]] && rate=""
    NETNS_LINKS=$links netns_up "$hosts" "$prefix" "$rate" || exit 1
    if [[ $link == mixed ]]; then
      # One slow host: host 0 at 1 Gbit/s, every other at 10 Gbit/s.
      netns_shape "$prefix" 0 1gbit
      for ((h = 1; h < hosts; h++)); do netns_shape "$prefix" "$h" 10gbit; done
    fi
    measure_stream "${hosts}hosts_$link"
    for ppn in $PPN; do
      for coll in $COLLECTIVES; do
        for ((round = 1; round <= ROUNDS; round++)); do
          # Rotate the order every round, so drift of the machine hits every library alike.
          read -ra libs <<<"$LIBS"
          shift_by=$(((round - 1) % ${#libs[@]}))
          libs=("${libs[@]:shift_by}" "${libs[@]:0:shift_by}")
          for lib in "${libs[@]}"; do
            file=$out/raw/${hosts}x${ppn}_${link}_${coll}_${lib}_r$round.txt
            echo "== ${hosts} hosts x $ppn, $link, $coll, $lib, round $round" >&2
            if ! "run_$lib" "$hosts" "$ppn" "$coll" "$file"; then
              echo "bench/hosts: $lib failed; its output: $file*" >&2
              status=1
            fi
          done
        done
      done
    done
    netns_down "$prefix"
  done
done
DATATYPE=$DATATYPE python3 "$here/summary.py" "$out" | tee "$out/summary.txt"
echo "bench/hosts: results in $out" >&2
exit $status
