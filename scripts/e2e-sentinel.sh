#!/usr/bin/env bash
# e2e-sentinel.sh: the service on a Sentinel-managed data Redis survives a failover (run by .ci/run).
#
# Starts scripts/cluster.sh with TOPOLOGY=sentinel in a temporary run directory on free ports (the data
# master and its replica, three sentinels, the three lock masters, INSTANCES instances, nginx), sells
# SALES units through nginx with lock MODE, waits until the replica has every write, kills the master
# (SIGKILL, by the pid cluster.sh recorded), and checks that Sentinel promotes the replica, that the
# instances follow it (through SECKILL_REDIS_SENTINELMASTER/SENTINELADDRS) and sell SALES more, and
# that the audit then shows exactly 2*SALES sold and no lost update. Then it stops everything and
# checks that no process is left.
#
# Environment: MODE [reentrant], SALES [20], STOCK [100], INSTANCES [3], KEEP_RUN_DIR [0],
#   SECKILL_BIN (a prebuilt binary; else cluster.sh builds one).
# Requires: redis-server, redis-sentinel, redis-cli (apt: redis-server redis-sentinel redis-tools),
#   nginx, curl, jq.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/testbed.sh
source "$ROOT/scripts/testbed.sh"

MODE="${MODE:-reentrant}"
SALES="${SALES:-20}"
STOCK="${STOCK:-100}"
need_whole SALES STOCK
((2 * SALES <= STOCK)) || die "STOCK=$STOCK must be at least 2*SALES=$((2 * SALES))"
need_cmd redis-server redis-server
need_cmd redis-sentinel redis-sentinel
need_cmd redis-cli redis-tools
need_cmd nginx nginx
need_cmd curl curl
need_cmd jq jq

# sell N: N sales through nginx, one at a time; prints how many answered 200.
sell() {
	local i ok=0
	for ((i = 0; i < $1; i++)); do
		if http_ok "$URL/inventory/sale?lock=$MODE" -X POST --max-time 10; then ok=$((ok + 1)); fi
	done
	printf '%s\n' "$ok"
}

master_of() { redis-cli -h 127.0.0.1 -p "$1" sentinel get-master-addr-by-name seckill 2>/dev/null | tail -n 1 | tr -d '\r'; }
offset_of() { redis-cli -h 127.0.0.1 -p "$1" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }

tb_init e2e-sentinel
PASS_NOTE="($MODE sold $SALES before and $SALES after a failover through nginx, none lost)"
# The replica's and the three sentinels' ports, apart from the block tb_init took.
free_ports base 4
export REPLICA_PORT=$base SENTINEL_PORTS="$((base + 1)) $((base + 2)) $((base + 3))"
export TOPOLOGY=sentinel LOCK_MODE="$MODE"
printf 'e2e-sentinel: run dir %s; master %s, replica %s, sentinels %s, instances from %s, nginx %s\n' \
	"$RUN_DIR" "$DATA_PORT" "$REPLICA_PORT" "$SENTINEL_PORTS" "$SERVICE_PORT" "$NGINX_PORT"
tb_up
reset_stock "$URL" "$STOCK" || fail "reset failed"
read -r -a SENTINELS <<<"$SENTINEL_PORTS"

before="$(sell "$SALES")"
((before == SALES)) || fail "before the failover: $before of $SALES sales answered 200"
# Replication is asynchronous: kill the master only once the replica has every write, so the
# check below is about the failover, not about writes lost in flight (that is the lab's row 12).
ok=""
for ((i = 0; i < 50; i++)); do
	m="$(offset_of "$DATA_PORT" master_repl_offset)" r="$(offset_of "$REPLICA_PORT" master_repl_offset)"
	if [[ -n "$m" && "$m" == "$r" ]]; then
		ok=1
		break
	fi
	sleep 0.1
done
[[ -n "$ok" ]] || fail "the replica did not catch up with the master within 5 s"

pid="$(tb_pid redis-data)" || die "redis-data is not running"
start=$SECONDS
kill -KILL "$pid"
promoted=""
for ((i = 0; i < 150; i++)); do
	if [[ "$(master_of "${SENTINELS[0]}")" == "$REPLICA_PORT" ]]; then
		promoted=1
		break
	fi
	sleep 0.2
done
[[ -n "$promoted" ]] || fail "Sentinel did not promote the replica within 30 s"
printf 'e2e-sentinel: master (pid %s) killed; replica %s promoted within %ss\n' "$pid" "$REPLICA_PORT" "$((SECONDS - start))"
# The other sentinels learn of the switch from the leader's hello messages, a moment later (a
# few ms in CI runs; they broadcast every 2 s at most): give them 5 s.
names_replica() { [[ "$(master_of "$1")" == "$REPLICA_PORT" ]]; }
for s in "${SENTINELS[@]}"; do
	wait_for 5 "sentinel $s names the replica" names_replica "$s" ||
		fail "sentinel $s still names port $(master_of "$s") 5 s after the promotion"
done

# The first sale on each instance may meet a pooled connection to the dead master (503); the
# instances then ask Sentinel. Allow that, bounded, then require every sale to go through.
wait_for 6 "GET /readyz through nginx" http_ok "$URL/readyz" || true
after=0
for ((i = 0; i < 3 * SALES && after < SALES; i++)); do
	after=$((after + $(sell 1)))
done
((after == SALES)) || fail "after the failover: $after of $SALES sales went through"
inv="$(inventory_settled "$URL" || true)"
[[ -n "$inv" ]] || die "GET /inventory did not answer after the failover"
read -r sold stock lost < <(jq -r '"\(.sold) \(.stock) \(.lostUpdates)"' <<<"$inv")
printf 'e2e-sentinel: audit: sold %s, stock %s, lost updates %s\n' "$sold" "$stock" "$lost"
((sold == 2 * SALES && stock == STOCK - 2 * SALES && lost == 0)) ||
	fail "audit: sold $sold (want $((2 * SALES))), stock $stock (want $((STOCK - 2 * SALES))), lost $lost (want 0)"

tb_teardown || fail "teardown: a process was left behind, or down failed"
((${#FAILURES[@]} == 0))
