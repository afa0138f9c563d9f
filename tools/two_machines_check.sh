#!/usr/bin/env bash
# tools/two_machines_check.sh: tools/tgrun --nnodes 2 across two "machines": two network namespaces
# made here, each with its own address on the two ends of a veth pair (10.231.X.1 and 10.231.X.2) and
# nothing else but loopback, so the ranks reach each other only through that link, as two hosts on a
# network would. One tgrun per namespace (--node-rank 0 and 1, --nproc-per-node 1 each) runs
# train_ddp over Gloo; both must finish with identical replicas. Needs root and a kernel that allows
# network namespaces and veth devices; where either is missing it says why and exits 77 (CTest's
# SKIP_RETURN_CODE), never pretending to pass. The namespaces are removed on every exit.
# Usage: two_machines_check.sh TRAIN_DDP_BINARY [train_ddp args...]
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: two_machines_check.sh TRAIN_DDP_BINARY [args...]" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
prog="$1"
shift
skip() { echo "two machines: skipped: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null || skip "no 'ip' command (iproute2)"
tag="tg$$"
a="${tag}a" b="${tag}b"
subnet="10.231.$(( $$ % 250 + 1 ))"
cleanup() {
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null   # deleting a namespace deletes its end of the veth pair, and so the pair
}
trap cleanup EXIT
ip netns add "$a" 2>/tmp/"$tag".err || skip "ip netns add refused: $(cat /tmp/"$tag".err)"
ip netns add "$b" 2>/tmp/"$tag".err || skip "ip netns add refused: $(cat /tmp/"$tag".err)"
ip link add "${tag}va" type veth peer name "${tag}vb" 2>/tmp/"$tag".err || skip "no veth devices: $(cat /tmp/"$tag".err)"
rm -f /tmp/"$tag".err
set -e
ip link set "${tag}va" netns "$a"
ip link set "${tag}vb" netns "$b"
ip -n "$a" addr add "$subnet.1/24" dev "${tag}va"
ip -n "$b" addr add "$subnet.2/24" dev "${tag}vb"
for ns in "$a" "$b"; do
  ip -n "$ns" link set lo up
done
ip -n "$a" link set "${tag}va" up
ip -n "$b" link set "${tag}vb" up
set +e
echo "two machines: namespaces $a ($subnet.1) and $b ($subnet.2) on a veth pair"

out_a=$(mktemp) out_b=$(mktemp)
node_args=("$@")
( ip netns exec "$a" "$here/tgrun" --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr "$subnet.1" \
    --master-port 29512 "$prog" "${node_args[@]}" >"$out_a" 2>&1 ) &
pa=$!
( ip netns exec "$b" "$here/tgrun" --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr "$subnet.1" \
    --master-port 29512 "$prog" "${node_args[@]}" >"$out_b" 2>&1 ) &
pb=$!
wait "$pa"; ra=$?
wait "$pb"; rb=$?
log_a=$(cat "$out_a")
echo "== machine 0 ($a, exit $ra)"; echo "$log_a"
echo "== machine 1 ($b, exit $rb)"; cat "$out_b"
rm -f "$out_a" "$out_b"
[ "$ra" -eq 0 ] && [ "$rb" -eq 0 ] || { echo "two machines: FAILED"; exit 1; }
grep -q "replicas identical on 2 ranks" <<<"$log_a" || { echo "two machines: FAILED (rank 0 did not report identical replicas)"; exit 1; }
echo "two machines: passed"
