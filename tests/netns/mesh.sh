#!/usr/bin/env bash
# mesh.sh — the DGX-1V NVLink mesh (or any subset of its GPUs) emulated with network
# namespaces, to run grove's topology-aware plans over links that really differ.
#
# Why: packed trees beat rings only on a network whose links have different speeds and where
# some pairs have no direct link. A DGX-1V is the classic case (Blink, MLSys 2020). Without
# GPUs we build its shape out of namespaces: one namespace per rank, one veth pair per NVLink
# pair (a /30 each), each end shaped with tc tbf to (NVLink count × UNIT), and a slower shared
# bridge standing for PCIe that carries the store and every pair without NVLink. The topology
# JSON written next to it names each link's addresses, so a communicator given it as
# GROVE_TOPO_FILE dials every NVLink neighbour over that very veth.
#
# Built by `mesh_up PREFIX GPUS DIR` (GPUS e.g. "0,1,4"; rank i is GPU GPUS[i]):
#
#   PREFIXsw   the PCIe bridge: br0 with ports p0..p(n-1), each shaped to MESH_PCIE_MBIT
#   PREFIXh<i> rank i: lo, "pcie" = 198.18.0.(i+1)/24 (shaped to MESH_PCIE_MBIT), and for
#              every NVLink neighbour j a veth "nv<j>" with a /30 from 198.18.1.0/24
#              (pair p: .4p+1 on the lower rank, .4p+2 on the higher), shaped to count×UNIT
#   DIR/mesh.json         the topology: ranks r0.., NVLink links with "address" and
#                         "reverse_address", the switch "pcie" (kind pcie) linked to each rank
#   DIR/mesh-nvlink.json  the same without the PCIe switch (the NVLink graph: its flow bounds
#                         are the reference rates of the DGX-1V subsets)
#
# Units: MESH_UNIT_MBIT (default 100) Mbit/s per NVLink, MESH_PCIE_MBIT (default UNIT/2) per
# PCIe port; the JSON's unit_gbps is UNIT in GB/s, so bounds come out in NVLink units.
# MESH_QUEUE_MS (default 1000): each tbf queue in ms. NVLink is lossless, so the emulation
# must not drop either: at 20 ms a 32 MiB all-8 broadcast lost 2092 packets in the tbf queues
# (TCP retransmits and stalls), at 100 ms an all-8 allreduce still lost 30–130 (its ~30
# connections per link each keep up to FIFO depth × tile in flight); at 1000 ms none
# (mesh_drops counts them). MESH_MTU (default 65520): the veths' MTU (see mesh_shape).
# Addresses come from 198.18.0.0/15 (reserved for benchmarks) and exist only inside these
# namespaces. Namespace names start with a prefix unique to the shell ("gmh<pid>");
# the first mesh_up installs netns.sh's traps, so everything made is deleted on exit, error
# or signal, and mesh_reap_stale deletes what a SIGKILLed earlier shell left.
#
# Sourced: `source mesh.sh; netns_check || exit $NETNS_SKIP; mesh_up "$(mesh_prefix)" 0,1,4
# "$dir"`, then `mesh_job NAME LIMIT [VAR=VALUE...] -- CMD...` runs one rank per namespace.
# As a command (by hand, as root):
#   mesh.sh up PREFIX GPUS DIR      build it (stays until `down`; undone on failure)
#   mesh.sh down PREFIX             delete it
#   mesh.sh json GPUS               print the topology JSON only (no namespaces)

_mesh_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=netns.sh
source "$_mesh_here/netns.sh"

# NVLinks between GPUs i and j of a DGX-1V (nvidia-smi topo -m; docs: reference topologies).
MESH_DGX1V=(
  "0 1 1 2 2 0 0 0"
  "1 0 2 1 0 2 0 0"
  "1 2 0 2 0 0 1 0"
  "2 1 2 0 0 0 0 1"
  "2 0 0 0 0 1 1 2"
  "0 2 0 0 1 0 2 1"
  "0 0 1 0 1 2 0 2"
  "0 0 0 1 2 1 2 0"
)
MESH_LATENCY_US=${MESH_LATENCY_US:-50}  # one way over a veth: 0.08-0.11 ms measured RTT
MESH_GPUS=()                            # GPU of each rank, set by mesh_up / mesh_json
MESH_PREFIX=""
MESH_JOBS=0

mesh__log() { echo "mesh: $*" >&2; }

mesh_prefix() { echo "gmh$$"; }
mesh_unit_mbit() { echo "${MESH_UNIT_MBIT:-100}"; }
mesh_pcie_mbit() { echo "${MESH_PCIE_MBIT:-$(($(mesh_unit_mbit) / 2))}"; }
mesh_links() {
  local row
  read -r -a row <<<"${MESH_DGX1V[$1]}"
  echo "${row[$2]}"
}
mesh_addr() { echo "198.18.0.$(($1 + 1))"; }  # rank i on the PCIe bridge

# Parses GPUS ("0,1,4" or "all") into MESH_GPUS; non-zero with a message when malformed.
mesh_parse_gpus() {
  local spec=$1 gpu seen=" "
  [[ $spec == all ]] && spec=0,1,2,3,4,5,6,7
  MESH_GPUS=()
  IFS=, read -r -a _mesh_list <<<"$spec"
  for gpu in "${_mesh_list[@]}"; do
    if ! [[ $gpu =~ ^[0-7]$ ]] || [[ $seen == *" $gpu "* ]]; then
      mesh__log "GPUS must be distinct GPUs 0..7 separated by commas, got '$1'"
      return 1
    fi
    seen+="$gpu "
    MESH_GPUS+=("$gpu")
  done
  ((${#MESH_GPUS[@]} >= 2)) || { mesh__log "GPUS needs at least 2 GPUs, got '$1'"; return 1; }
}

# Calls `$1 I J COUNT PAIR` for every NVLink-connected rank pair I < J (PAIR numbers them).
mesh__each_pair() {
  local n=${#MESH_GPUS[@]} i j c pair=0
  for ((i = 0; i < n; i++)); do
    for ((j = i + 1; j < n; j++)); do
      c=$(mesh_links "${MESH_GPUS[i]}" "${MESH_GPUS[j]}")
      ((c > 0)) || continue
      "$1" "$i" "$j" "$c" "$pair" || return 1
      pair=$((pair + 1))
    done
  done
}

mesh_pair_addr() { echo "198.18.1.$((4 * $1 + $2))"; }  # side 1 = lower rank, 2 = higher

mesh__gbps() { awk -v m="$1" 'BEGIN { printf "%.9g", m / 8000 }'; }

# Prints the topology JSON of MESH_GPUS; with "nvlink" as $1, without the PCIe switch.
mesh_json() {
  local only_nvlink=${1:-} n=${#MESH_GPUS[@]} i sep="" unit
  unit=$(mesh__gbps "$(mesh_unit_mbit)")
  echo "{"
  echo "  \"name\": \"dgx1v-netns:$(IFS=,; echo "${MESH_GPUS[*]}")$([[ -n $only_nvlink ]] && echo " nvlink")\","
  echo "  \"_note\": \"written by tests/netns/mesh.sh: NVLink = $(mesh_unit_mbit) Mbit/s per link (veth + tbf), PCIe = $(mesh_pcie_mbit) Mbit/s per port (shared bridge)\","
  echo "  \"unit_gbps\": $unit,"
  echo "  \"vertices\": ["
  for ((i = 0; i < n; i++)); do
    printf '%s    {"name": "r%d", "rank": %d}' "$sep" "$i" "$i"
    sep=$',\n'
  done
  [[ -z $only_nvlink ]] && printf '%s    {"name": "pcie", "switch": true}' "$sep"
  printf '\n  ],\n'
  sep=""
  echo "  \"links\": ["
  _mesh_json_pair() {
    printf '%s    {"from": "r%d", "to": "r%d", "gbps": %s, "count": %d, "kind": "nvlink", "latency_us": %s, "address": "%s", "reverse_address": "%s"}' \
      "$sep" "$1" "$2" "$unit" "$3" "$MESH_LATENCY_US" "$(mesh_pair_addr "$4" 2)" \
      "$(mesh_pair_addr "$4" 1)"
    sep=$',\n'
  }
  mesh__each_pair _mesh_json_pair
  if [[ -z $only_nvlink ]]; then
    for ((i = 0; i < n; i++)); do
      printf '%s    {"from": "r%d", "to": "pcie", "gbps": %s, "kind": "pcie", "latency_us": %s}' \
        "$sep" "$i" "$(mesh__gbps "$(mesh_pcie_mbit)")" "$MESH_LATENCY_US"
      sep=$',\n'
    done
  fi
  printf '\n  ]\n}\n'
}

# Shapes DEV in namespace NS (egress) to RATE_MBIT. The bucket holds >= 10 ms of traffic
# and at least two packets (tbf needs burst >= rate / HZ and >= the MTU); the queue holds
# MESH_QUEUE_MS (1000), so that the many connections of a packed-tree plan sharing one link
# never overflow it (no drops). The MTU (MESH_MTU, default 65520) is a veth's largest: with
# 1500-byte packets TCP/IP headers take ~5 % of each link (a lone 1-link broadcast reached
# 0.95 of λ), which NVLink, whose unit is payload bandwidth, does not lose; and every packet
# costs the 2 shared CPUs work in the kernel.
mesh_shape() {
  local ns=$1 dev=$2 mbit=$3 burst mtu=${MESH_MTU:-65520}
  burst=$((mbit * 1000000 / 8 / 100))
  ((burst < 2 * mtu)) && burst=$((2 * mtu))
  ((burst < 32768)) && burst=32768
  ip -n "$ns" link set dev "$dev" mtu "$mtu" &&
    netns_tc -n "$ns" qdisc replace dev "$dev" root tbf rate "${mbit}mbit" burst "$burst" \
      latency "${MESH_QUEUE_MS:-1000}ms"
}

_mesh_up_pair() {
  local i=$1 j=$2 c=$3 p=$4 hi hj mbit
  hi=$(netns_host "$MESH_PREFIX" "$i")
  hj=$(netns_host "$MESH_PREFIX" "$j")
  mbit=$((c * $(mesh_unit_mbit)))
  ip -n "$hi" link add "nv$j" type veth peer name "nv$i" netns "$hj" &&
    ip -n "$hi" addr add "$(mesh_pair_addr "$p" 1)/30" dev "nv$j" &&
    ip -n "$hj" addr add "$(mesh_pair_addr "$p" 2)/30" dev "nv$i" &&
    ip -n "$hi" link set "nv$j" up && ip -n "$hj" link set "nv$i" up &&
    mesh_shape "$hi" "nv$j" "$mbit" && mesh_shape "$hj" "nv$i" "$mbit"
}

# Builds the mesh of GPUS under PREFIX and writes DIR/mesh.json and DIR/mesh-nvlink.json.
# Returns non-zero (having deleted what it made) if any step fails.
mesh_up() {
  local prefix=$1 gpus=$2 dir=$3 n i host sw
  mesh_parse_gpus "$gpus" || return 1
  if ! [[ $prefix =~ ^[A-Za-z][A-Za-z0-9]{0,15}$ ]]; then
    mesh__log "up: PREFIX must be a letter then up to 15 letters or digits, got '$prefix'"
    return 1
  fi
  if [[ -n $(netns_list "$prefix") ]]; then
    mesh__log "up: namespaces with prefix '$prefix' already exist: $(netns_list "$prefix" | xargs)"
    return 1
  fi
  [[ -d $dir ]] || { mesh__log "up: directory '$dir' does not exist"; return 1; }
  MESH_PREFIX=$prefix
  n=${#MESH_GPUS[@]}
  netns__install_traps
  sw="${prefix}sw"
  if ! {
    netns__add "$sw" && ip -n "$sw" link set lo up &&
      ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up
  }; then
    mesh__log "up: cannot create the PCIe bridge namespace $sw"
    netns_cleanup
    return 1
  fi
  for ((i = 0; i < n; i++)); do
    host=$(netns_host "$prefix" "$i")
    if ! {
      netns__add "$host" && ip -n "$host" link set lo up &&
        ip -n "$host" link add pcie type veth peer name "p$i" netns "$sw" &&
        ip -n "$sw" link set "p$i" master br0 && ip -n "$sw" link set "p$i" up &&
        ip -n "$host" addr add "$(mesh_addr "$i")/24" dev pcie &&
        ip -n "$host" link set pcie up &&
        mesh_shape "$host" pcie "$(mesh_pcie_mbit)" && mesh_shape "$sw" "p$i" "$(mesh_pcie_mbit)"
    }; then
      mesh__log "up: cannot create rank $i (GPU ${MESH_GPUS[i]}, namespace $host)"
      netns_cleanup
      return 1
    fi
  done
  if ! mesh__each_pair _mesh_up_pair; then
    mesh__log "up: cannot create the NVLink veths"
    netns_cleanup
    return 1
  fi
  mesh_json >"$dir/mesh.json" && mesh_json nvlink >"$dir/mesh-nvlink.json"
}

# Prints the packets the tbf queues of the mesh under PREFIX dropped since it was built (sum
# over every shaped device; 0 means the run was lossless, as NVLink is).
mesh_drops() {
  local prefix=$1 ns sum=0 d
  for ns in $(netns_list "$prefix"); do
    for d in $(tc -s -n "$ns" qdisc show 2>/dev/null | awk '/dropped/ { gsub(",", "", $7); print $7 }'); do
      sum=$((sum + d))
    done
  done
  echo "$sum"
}

# Deletes namespaces left by an earlier shell that died without cleaning up (SIGKILL):
# those named gmh<pid>... whose pid no longer exists.
mesh_reap_stale() {
  local name pid
  for name in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $name =~ ^gmh([0-9]+)(sw|h[0-9]+)$ ]] || continue
    pid=${BASH_REMATCH[1]}
    [[ -d /proc/$pid ]] && continue
    mesh__log "deleting stale namespace $name (its creator, pid $pid, is gone)"
    netns__delete "$name"
  done
}

# mesh_job NAME LIMIT_S OUTDIR [VAR=VALUE...] -- CMD...
# Runs CMD once per rank, rank i in namespace PREFIXh<i>, with the launcher variables
# (GROVE_RANK..., the store on rank 0's PCIe address, GROVE_SOCKET_IFNAME==pcie so that
# published addresses are the bridge's) plus the VAR=VALUEs, each under `timeout LIMIT_S`.
# Rank i's output: OUTDIR/NAME.i.out/.err. Returns the number of ranks that did not exit 0
# (MESH_FAILED lists "rank:status").
mesh_job() {
  local name=$1 limit=$2 out=$3
  shift 3
  local extra=()
  while (($#)) && [[ $1 != -- ]]; do
    extra+=("$1")
    shift
  done
  shift
  local n=${#MESH_GPUS[@]} port=$((29700 + MESH_JOBS % 200)) jobid secret r rc pids=()
  MESH_JOBS=$((MESH_JOBS + 1))
  jobid=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
  secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  for ((r = 0; r < n; r++)); do
    GROVE_RANK=$r GROVE_WORLD_SIZE=$n GROVE_LOCAL_RANK=0 GROVE_LOCAL_SIZE=1 \
      GROVE_ROOT=$(mesh_addr 0):$port GROVE_SECRET=$secret GROVE_JOB_ID=$jobid \
      GROVE_SOCKET_IFNAME="=pcie" \
      netns_spawn "$MESH_PREFIX" "$r" "$out/$name.$r.out" "$out/$name.$r.err" \
      env "${extra[@]}" timeout -k 5 "$limit" "$@"
    pids+=("$NETNS_LAST_PID")
  done
  MESH_FAILED=()
  for ((r = 0; r < n; r++)); do
    wait "${pids[r]}"
    rc=$?
    ((rc == 0)) || MESH_FAILED+=("$r:$rc")
  done
  return ${#MESH_FAILED[@]}
}

mesh__main() {
  local command=${1:-}
  shift || true
  case $command in
    up)
      (($# == 3)) || { mesh__log "usage: mesh.sh up PREFIX GPUS DIR"; exit 2; }
      netns_check || { mesh__log "unavailable: $NETNS_REASON"; exit "$NETNS_SKIP"; }
      mesh_up "$@" || exit 1
      # shellcheck disable=SC2034  # read by netns_cleanup
      NETNS_CREATED=()  # success: the namespaces outlive this command
      trap - EXIT
      echo "mesh: $(netns_list "$1" | sort -V | xargs); topology in $3/mesh.json"
      ;;
    down)
      (($# == 1)) || { mesh__log "usage: mesh.sh down PREFIX"; exit 2; }
      netns_down "$1"
      ;;
    json)
      (($# == 1)) || { mesh__log "usage: mesh.sh json GPUS"; exit 2; }
      mesh_parse_gpus "$1" || exit 2
      mesh_json
      ;;
    *)
      sed -n '/^# As a command/,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  mesh__main "$@"
fi
