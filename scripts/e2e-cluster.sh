#!/usr/bin/env bash
# e2e-cluster.sh: the end-to-end test of the data store on a Redis Cluster with many SKUs (run by .ci/run).
#
# Starts scripts/cluster.sh with TOPOLOGY=cluster in a temporary run directory on free ports: three
# cluster-enabled redis-server joined by redis-cli --cluster create, the three independent lock
# masters, INSTANCES service instances selling SKU_COUNT SKUs (inventory001..), and nginx. For each
# of MODES it resets every SKU to STOCK, then sells every SKU at once through nginx: one hey per SKU
# (REQUESTS sales at CONCURRENCY), at most PARALLEL hey at a time. It checks, per mode and SKU, from
# GET /inventory?sku=...: exactly STOCK sold, stock 0, 0 lost updates, 0 oversold, as many 200
# answers as sales; that the SKUs' keys landed on every cluster node; that `redis-cli -c get` reads a
# stock key under its plain name. Then it stops the cluster and checks that no process is left.
#
# Environment: MODES ["reentrant fenced atomic"], SKU_COUNT [16], STOCK [100], REQUESTS [200],
#   CONCURRENCY [10], PARALLEL [8] hey at once, HEY_TIMEOUT [30] s, INSTANCES [3], KEEP_RUN_DIR [0],
#   SECKILL_BIN (a prebuilt binary; else cluster.sh builds one).
# Requires: redis-server, redis-cli (apt: redis-server redis-tools), nginx, hey, curl, jq.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/testbed.sh
source "$ROOT/scripts/testbed.sh"

MODES="${MODES:-reentrant fenced atomic}"
SKU_COUNT="${SKU_COUNT:-16}"
STOCK="${STOCK:-100}"
REQUESTS="${REQUESTS:-200}"
CONCURRENCY="${CONCURRENCY:-10}"
PARALLEL="${PARALLEL:-8}"
HEY_TIMEOUT="${HEY_TIMEOUT:-30}"
need_whole SKU_COUNT STOCK REQUESTS CONCURRENCY PARALLEL HEY_TIMEOUT
((SKU_COUNT >= 1 && SKU_COUNT <= 999)) || die "SKU_COUNT=$SKU_COUNT is out of range 1..999"
((CONCURRENCY >= 1 && REQUESTS >= CONCURRENCY)) || die "need 1 <= CONCURRENCY <= REQUESTS (hey's rule)"
((REQUESTS >= STOCK)) || die "REQUESTS=$REQUESTS must be at least STOCK=$STOCK, so every SKU can sell out"
((PARALLEL >= 1 && PARALLEL <= 64)) || die "PARALLEL=$PARALLEL is out of range 1..64"

for c in redis-server redis-cli nginx hey curl jq; do
	case "$c" in
	redis-cli) need_cmd "$c" redis-tools ;;
	*) need_cmd "$c" "$c" ;;
	esac
done

tb_init e2e-cluster
# The cluster nodes: three free ports whose cluster bus ports (+10000) are free too, apart from
# the block tb_init took.
free_ports base 3 10000
export CLUSTER_PORTS="$base $((base + 1)) $((base + 2))"
PASS_NOTE="($SKU_COUNT SKUs on a 3-master Redis Cluster, $MODES each sold exactly $STOCK through nginx on $INSTANCES instances)"
SKUS="$(printf 'inventory%03d,' $(seq 1 "$SKU_COUNT"))"
export TOPOLOGY=cluster SKUS="${SKUS%,}" LOCK_MODE=reentrant
IFS=, read -r -a SKU_LIST <<<"$SKUS"
printf 'e2e-cluster: run dir %s; cluster nodes %s, lock masters %s, instances from %s, nginx %s\n' \
	"$RUN_DIR" "$CLUSTER_PORTS" "$MASTER_PORTS" "$SERVICE_PORT" "$NGINX_PORT"
tb_up
"$CLUSTER" status >/dev/null || fail "cluster.sh status: not every part answers right after up"

read -r -a NODES <<<"$CLUSTER_PORTS"
for p in "${NODES[@]}"; do
	info="$(redis-cli -h 127.0.0.1 -p "$p" cluster info | tr -d '\r')"
	[[ "$info" == *"cluster_state:ok"* && "$info" == *"cluster_known_nodes:3"* ]] ||
		fail "cluster node $p: not ok ($(grep -E 'state|known' <<<"$info" | paste -sd' '))"
done
listed="$(curl -sf --max-time 5 "$URL/inventory" | jq -r '.skus[].sku' 2>/dev/null | sort | paste -sd, || true)"
[[ "$listed" == "$(tr ',' '\n' <<<"$SKUS" | sort | paste -sd,)" ]] ||
	fail "GET /inventory lists [$listed], want the $SKU_COUNT configured SKUs"

# sell_sku MODE SKU: one hey for SKU, its report in RUN_DIR.
sell_sku() {
	hey -n "$REQUESTS" -c "$CONCURRENCY" -t "$HEY_TIMEOUT" -m POST \
		"$URL/inventory/sale?lock=$1&sku=$2" >"$RUN_DIR/hey-$1-$2.txt" 2>&1
}
export -f sell_sku
export URL REQUESTS CONCURRENCY HEY_TIMEOUT RUN_DIR

for mode in $MODES; do
	for sku in "${SKU_LIST[@]}"; do
		reset_stock "$URL" "$STOCK" "$sku" || fail "$mode: reset $sku failed"
	done
	start=$SECONDS
	# shellcheck disable=SC2016 # $0 and $1 are bash -c's own arguments
	printf '%s\n' "${SKU_LIST[@]}" | xargs -P "$PARALLEL" -I{} bash -c 'sell_sku "$0" "$1"' "$mode" {} ||
		fail "$mode: a hey run failed (see $RUN_DIR/hey-$mode-*.txt)"
	took=$((SECONDS - start))
	wrong=0 total=0
	for sku in "${SKU_LIST[@]}"; do
		inv="$(curl -sf --max-time 5 "$URL/inventory?sku=$sku" || true)"
		if [[ -z "$inv" ]]; then
			fail "$mode: GET /inventory?sku=$sku did not answer"
			wrong=$((wrong + 1))
			continue
		fi
		read -r sold stock lost over < <(jq -r '"\(.sold) \(.stock) \(.lostUpdates) \(.oversold)"' <<<"$inv")
		eval "$(parse_hey "$RUN_DIR/hey-$mode-$sku.txt")"
		oks=$H_200
		total=$((total + sold))
		if ((sold != STOCK || stock != 0 || lost != 0 || over != 0 || oks != sold)); then
			fail "$mode: $sku sold $sold of $STOCK (stock left $stock, lost $lost, oversold $over, 200 answers $oks)"
			wrong=$((wrong + 1))
		fi
	done
	printf 'e2e-cluster: %-9s %d SKUs, %d sold in %ds, %d SKU(s) wrong\n' "$mode" "$SKU_COUNT" "$total" "$took" "$wrong"
done

# Every node holds some SKU's keys (the SKUs really are spread), and a stock key reads under its
# plain name, as `redis-cli get inventory001` would read it.
for p in "${NODES[@]}"; do
	n="$(redis-cli -h 127.0.0.1 -p "$p" dbsize | tr -d '\r')"
	((n > 0)) || fail "cluster node $p holds no key: the SKUs are not spread over the cluster"
	printf 'e2e-cluster: node %s holds %s keys\n' "$p" "$n"
done
v="$(redis-cli -c -h 127.0.0.1 -p "${NODES[0]}" get "${SKU_LIST[0]}" | tr -d '\r')"
[[ "$v" == 0 ]] || fail "redis-cli -c get ${SKU_LIST[0]}: '$v', want 0 after the last sale"

tb_teardown || fail "teardown: a process was left behind, or down failed"
((${#FAILURES[@]} == 0))
