#!/usr/bin/env bash
# e2e.sh: the end-to-end test of the demo topology (run by .ci/run).
#
# Starts scripts/cluster.sh (4 redis-server, 3 instances, nginx) in a temporary run directory on
# free non-default ports, runs scripts/loadtest.sh with stock 500, 2000 requests at concurrency 50
# for `none` and every safe mode, and checks:
#   none:        lost updates > 0 or oversold > 0 (the bug really shows through nginx)
#   safe modes:  exactly 500 sold, 0 lost, 0 oversold, one sale per 200 answer, every instance sold some
# then stops the cluster and checks that none of its processes is left. A trap stops the cluster on
# any exit. Exit status 0 only when everything held; otherwise it prints why.
#
# Environment: SAFE_MODES ["lua reentrant multilock redlock fenced redlock-fenced fair atomic"], STOCK [500],
#   REQUESTS [2000], CONCURRENCY [50], TIME [300] seconds per mode, INSTANCES [3],
#   KEEP_RUN_DIR [0] (1 keeps the logs), LOCK_WAIT, LOCK_LEASE (passed to the instances).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/testbed.sh
source "$ROOT/scripts/testbed.sh"

SAFE_MODES="${SAFE_MODES:-lua reentrant multilock redlock fenced redlock-fenced fair atomic}"
STOCK="${STOCK:-500}"
REQUESTS="${REQUESTS:-2000}"
CONCURRENCY="${CONCURRENCY:-50}"
TIME="${TIME:-300}"
need_whole STOCK REQUESTS CONCURRENCY TIME

# Static checks of the deployment files that cannot run here (no Docker engine, no JMeter).
static_checks() {
	if ! command -v docker-compose >/dev/null 2>&1; then
		warn "docker-compose not installed (apt: docker-compose): docker-compose.yml not validated"
	elif (cd "$ROOT" && docker-compose -f docker-compose.yml config -q); then
		printf 'e2e: docker-compose config accepts docker-compose.yml\n'
	else
		fail "docker-compose config rejects docker-compose.yml"
	fi
	local xmlcheck=(python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])')
	command -v xmllint >/dev/null 2>&1 && xmlcheck=(xmllint --noout)
	if ! command -v "${xmlcheck[0]}" >/dev/null 2>&1; then
		warn "neither xmllint (apt: libxml2-utils) nor python3: scripts/seckill.jmx not checked"
	elif "${xmlcheck[@]}" "$ROOT/scripts/seckill.jmx"; then
		printf 'e2e: scripts/seckill.jmx is well-formed XML (%s)\n' "${xmlcheck[0]}"
	else
		fail "scripts/seckill.jmx is not well-formed XML"
	fi
	# The compose nginx config, with the container names replaced by a loopback address.
	local t
	t="$(mktemp -d)"
	mkdir -p "$t/logs"
	sed -e 's/server seckill-[0-9]*:8080;/server 127.0.0.1:8080;/' -e 's/listen 80;/listen 127.0.0.1:8080;/' \
		"$ROOT/deploy/nginx/nginx.conf" >"$t/nginx.conf"
	if nginx -t -q -p "$t/" -e "$t/logs/error.log" -c "$t/nginx.conf"; then
		printf 'e2e: nginx -t accepts deploy/nginx/nginx.conf\n'
	else
		fail "nginx rejects deploy/nginx/nginx.conf"
	fi
	rm -rf "$t"
}

need_cmd nginx nginx
tb_init e2e
PASS_NOTE="(none showed its anomaly; $SAFE_MODES each sold exactly $STOCK through nginx on $INSTANCES instances)"
static_checks
printf 'e2e: run dir %s; ports: data %s, masters %s, instances from %s, nginx %s\n' \
	"$RUN_DIR" "$DATA_PORT" "$MASTER_PORTS" "$SERVICE_PORT" "$NGINX_PORT"
"$CLUSTER" up || die "cluster.sh up failed (see above)"
"$CLUSTER" status || fail "cluster.sh status: not every part answers right after up"
# up is idempotent: a second one starts nothing and leaves every pid as it was.
before="$(cat "$RUN_DIR"/*.pid)"
"$CLUSTER" up 2>"$RUN_DIR/up-again.log" || fail "a second cluster.sh up failed: $(tail -n 3 "$RUN_DIR/up-again.log")"
[[ "$(cat "$RUN_DIR"/*.pid)" == "$before" ]] || fail "a second cluster.sh up changed the pids"
grep -q ' 0 started' "$RUN_DIR/up-again.log" || fail "a second cluster.sh up started something: $(tail -n 1 "$RUN_DIR/up-again.log")"
printf 'e2e: a second up started nothing\n'

results="$RUN_DIR/results.tsv"
# shellcheck disable=SC2086 # SAFE_MODES is a word list
URL="$URL" STOCK="$STOCK" REQUESTS="$REQUESTS" CONCURRENCY="$CONCURRENCY" TIME="$TIME" \
	SECKILL_BIN="$RUN_DIR/seckill" REQUIRE_ALL=1 EXACT=1 RESULTS="$results" "$ROOT/scripts/loadtest.sh" none $SAFE_MODES ||
	fail "loadtest.sh exited with status $? (see its FAILED list above)"
[[ -s "$results" ]] || die "loadtest.sh wrote no results"

# Our own checks on the results, independent of loadtest.sh's verdicts.
declare -A seen=()
while IFS=$'\t' read -r mode verdict requests ok _c409 _c503 _other sold _left lost over _rps _p50 _p99 by history notes; do
	[[ "$mode" != mode ]] || continue
	seen[$mode]=1
	if [[ "$verdict" == SKIPPED || "$verdict" == FAIL && "$sold" == - ]]; then
		fail "$mode: not run ($notes)"
		continue
	fi
	if [[ "$mode" == none ]]; then
		((lost > 0 || over > 0)) || fail "none: no lost update and no oversell ($sold sold): the bug did not show"
		[[ "$history" == "NOT linearizable" ]] || fail "none: its recorded history came out $history, want NOT linearizable"
		continue
	fi
	[[ "$history" == linearizable ]] || fail "$mode: its recorded history came out $history, want linearizable"
	((sold == STOCK)) || fail "$mode: sold $sold, expected exactly $STOCK"
	((lost == 0)) || fail "$mode: $lost lost updates"
	((over == 0)) || fail "$mode: oversold $over"
	((ok == sold)) || fail "$mode: $ok answers were 200 but $sold were sold"
	((requests == REQUESTS)) || fail "$mode: $requests of $REQUESTS requests were answered"
	for ((i = 1; i <= INSTANCES; i++)); do
		n="$(tr ',' '\n' <<<"$by" | sed -n "s/^seckill-$i=//p")"
		((${n:-0} > 0)) || fail "$mode: seckill-$i sold nothing (by instance: $by)"
	done
done <"$results"
for mode in none $SAFE_MODES; do
	[[ -n "${seen[$mode]:-}" ]] || fail "$mode: missing from the results"
done

tb_teardown || fail "teardown: cluster.sh down failed, or left a process behind"
((${#FAILURES[@]} == 0))
