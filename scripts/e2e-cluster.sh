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
for v in SKU_COUNT STOCK REQUESTS CONCURRENCY PARALLEL HEY_TIMEOUT; do
	[[ "${!v}" =~ ^[0-9]+$ ]] || die "$v=${!v} is not a whole number"
done
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

FAILURES=()
fail() {
	FAILURES+=("$*")
	printf 'e2e-cluster: FAIL: %s\n' "$*" >&2
}

tb_on_exit() {
	local rc="$1"
	if ((rc != 0)) || ((${#FAILURES[@]} > 0)); then
		printf '\ne2e-cluster: FAILED\n' >&2
		((${#FAILURES[@]} == 0)) || printf '  %s\n' "${FAILURES[@]}" >&2
	else
		printf '\ne2e-cluster: PASSED (%s SKUs on a 3-master Redis Cluster, %s each sold exactly %s through nginx on %s instances)\n' \
			"$SKU_COUNT" "$MODES" "$STOCK" "$INSTANCES"
	fi
}

# pick_cluster_ports: three free ports whose cluster bus ports (+10000) are free too, all below
# the kernel's ephemeral range and away from the block tb_init picked.
pick_cluster_ports() {
	local try base p ok lo=32768 _hi
	read -r lo _hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	((lo > 21000)) || lo=32768
	for ((try = 0; try < 50; try++)); do
		base=$((10000 + RANDOM % (lo - 10000 - 10000 - 3)))
		ok=1
		for ((p = base; p < base + 3; p++)); do
			if port_in_use "$p" || port_in_use $((p + 10000)) ||
				[[ " $MASTER_PORTS $DATA_PORT $NGINX_PORT " == *" $p "* ]] ||
				((p >= SERVICE_PORT && p < SERVICE_PORT + INSTANCES)); then
				ok=""
				break
			fi
		done
		if [[ -n "$ok" ]]; then
			export CLUSTER_PORTS="$base $((base + 1)) $((base + 2))"
			return 0
		fi
	done
	die "no 3 free cluster ports (with their bus ports) found in 50 tries"
}

tb_init e2e-cluster
pick_cluster_ports
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

# ok_answers FILE: the number of 200 answers in a hey report.
ok_answers() { awk '/^Status code distribution:/ { s = 1; next } s && /\[200\]/ { print $2; f = 1; exit } END { if (!f) print 0 }' "$1"; }

for mode in $MODES; do
	for sku in "${SKU_LIST[@]}"; do
		code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST "$URL/inventory/reset?sku=$sku&stock=$STOCK")"
		[[ "$code" == 200 ]] || fail "$mode: reset $sku answered $code"
	done
	start=$SECONDS
	# shellcheck disable=SC2016 # $0 and $1 are bash -c's own arguments
	printf '%s\n' "${SKU_LIST[@]}" | xargs -P "$PARALLEL" -I{} bash -c 'sell_sku "$0" "$1"' "$mode" {} ||
		fail "$mode: a hey run failed (see $RUN_DIR/hey-$mode-*.txt)"
	took=$((SECONDS - start))
	bad=0 total=0
	for sku in "${SKU_LIST[@]}"; do
		inv="$(curl -sf --max-time 5 "$URL/inventory?sku=$sku" || true)"
		if [[ -z "$inv" ]]; then
			fail "$mode: GET /inventory?sku=$sku did not answer"
			bad=$((bad + 1))
			continue
		fi
		read -r sold stock lost over < <(jq -r '"\(.sold) \(.stock) \(.lostUpdates) \(.oversold)"' <<<"$inv")
		oks="$(ok_answers "$RUN_DIR/hey-$mode-$sku.txt")"
		total=$((total + sold))
		if ((sold != STOCK || stock != 0 || lost != 0 || over != 0 || oks != sold)); then
			fail "$mode: $sku sold $sold of $STOCK (stock left $stock, lost $lost, oversold $over, 200 answers $oks)"
			bad=$((bad + 1))
		fi
	done
	printf 'e2e-cluster: %-9s %d SKUs, %d sold in %ds, %d SKU(s) wrong\n' "$mode" "$SKU_COUNT" "$total" "$took" "$bad"
done

# Every node holds some SKU's keys (the SKUs really are spread), and a stock key reads under its
# plain name, as `redis-cli get inventory001` does in the documents.
for p in "${NODES[@]}"; do
	n="$(redis-cli -h 127.0.0.1 -p "$p" dbsize | tr -d '\r')"
	((n > 0)) || fail "cluster node $p holds no key: the SKUs are not spread over the cluster"
	printf 'e2e-cluster: node %s holds %s keys\n' "$p" "$n"
done
v="$(redis-cli -c -h 127.0.0.1 -p "${NODES[0]}" get "${SKU_LIST[0]}" | tr -d '\r')"
[[ "$v" == 0 ]] || fail "redis-cli -c get ${SKU_LIST[0]}: '$v', want 0 after the last sale"

tb_teardown || fail "teardown: a process was left behind, or down failed"
((${#FAILURES[@]} == 0))
