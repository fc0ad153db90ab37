#!/usr/bin/env bash
# netns_agent.sh HOST COMMAND... — Open MPI's remote-start agent (--mca plm_rsh_agent) for
# emulated hosts: instead of ssh to HOST, runs COMMAND in HOST's network namespace, under a
# hostname of its own (a UTS namespace): Open MPI names its shared-memory segments after the
# node name, and emulated hosts that share /dev/shm and one hostname would collide.
# NETNS_AGENT_MAP (set by bench/hosts/run.sh, inherited through mpirun) maps each host
# address to its namespace: "198.18.0.1=ns0,198.18.0.2=ns1".
set -u
host=$1
shift
ns=""
IFS=, read -ra pairs <<<"${NETNS_AGENT_MAP:-}"
for pair in "${pairs[@]}"; do
  [[ ${pair%%=*} == "$host" ]] && ns=${pair#*=}
done
[[ -n $ns ]] || { echo "netns_agent: no namespace for host '$host' in NETNS_AGENT_MAP" >&2; exit 1; }
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns && $*"
