#!/usr/bin/env bash
# bench-http.sh: the HTTP performance targets, on one instance. Starts its own redis-server
# processes (data + 3 masters) and one seckill instance, all on free ports of 127.0.0.1 (the
# instance via SECKILL_SERVER_HOST), in a temporary RUN_DIR, and stops exactly those processes on
# exit. Then, in the same run:
#   1. rate: hey against GET /healthz (a trivial endpoint of the same server) and against
#      POST /inventory/sale?lock=atomic (stock far beyond what sells), each DURATION seconds at
#      CONCURRENCY clients after a short warm-up; prints both rates and their ratio
#      (target: sale >= 0.5 x healthz), and checks every sale answered 200 and the audit
#      (0 lost updates, one order per 200);
#   2. memory: the instance's RSS (VmRSS, sampled every second) during the load, and
#      go_goroutines from /metrics before the load (idle) and after it (must fall back to idle,
#      give or take GOROUTINE_SLACK, within SETTLE seconds);
#   3. with --soak (or SOAK_SECONDS > 0): SOAK_SECONDS [60] more at SOAK_CONCURRENCY [200]
#      clients on the sale, RSS sampled all along (target < RSS_LIMIT_MB [100] MB), goroutines
#      back to idle afterwards. scripts/soak.sh checks the same through nginx on 3 instances.
# Exit status 1 when a check failed.
#
# Environment (defaults in brackets): DURATION [10] seconds  CONCURRENCY [50]  WARMUP [2] seconds
#   SOAK_SECONDS [0; 60 with --soak]  SOAK_CONCURRENCY [200]  RSS_LIMIT_MB [100]  SETTLE [10]
#   GOROUTINE_SLACK [5]  RATIO_TARGET [0.5]  KEEP_RUN_DIR [0]
#   SECKILL_BIN (a prebuilt binary; else `go build` into RUN_DIR)
# Requires: redis-server, hey, curl, awk (and go unless SECKILL_BIN is set).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION="${DURATION:-10}"
CONCURRENCY="${CONCURRENCY:-50}"
WARMUP="${WARMUP:-2}"
SOAK_SECONDS="${SOAK_SECONDS:-0}"
SOAK_CONCURRENCY="${SOAK_CONCURRENCY:-200}"
RSS_LIMIT_MB="${RSS_LIMIT_MB:-100}"
SETTLE="${SETTLE:-10}"
GOROUTINE_SLACK="${GOROUTINE_SLACK:-5}"
RATIO_TARGET="${RATIO_TARGET:-0.5}"
KEEP_RUN_DIR="${KEEP_RUN_DIR:-0}"
STOCK=1000000000 # config.MaxStock: never sells out

for arg in "$@"; do
	case "$arg" in
	--soak) ((SOAK_SECONDS > 0)) || SOAK_SECONDS=60 ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument $arg (use --soak or --help)" ;;
	esac
done
need_whole DURATION CONCURRENCY WARMUP SOAK_SECONDS SOAK_CONCURRENCY RSS_LIMIT_MB SETTLE GOROUTINE_SLACK
((DURATION >= 1 && DURATION <= 600 && CONCURRENCY >= 1 && SOAK_SECONDS <= 600)) ||
	die "need 1 <= DURATION <= 600, CONCURRENCY >= 1, SOAK_SECONDS <= 600"
need_cmd redis-server redis-server
need_cmd hey hey
need_cmd curl curl

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/seckill-bench-http.XXXXXX")"
PARTS=()
FAIL_MARK=FAIL # fail (lib.sh) prints "  FAIL MSG", as ok prints "  PASS MSG"
PASS_NOTE="(every check)"
ok() { printf '  PASS %s\n' "$*"; }
# check MESSAGE CMD [ARGS...]: PASS when CMD succeeds, else FAIL.
check() {
	local msg="$1"
	shift
	if "$@"; then ok "$msg"; else fail "$msg"; fi
}
at_least() { ! num_lt "$1" "$2"; }
# only_200 OK ALL: every one of ALL (> 0) requests was answered 200.
only_200() { (($1 > 0 && $1 == $2)); }
# back_to_idle NOW IDLE: a goroutine count was read and is within the slack of the idle one.
back_to_idle() { (($1 >= 0 && $1 <= $2 + GOROUTINE_SLACK)); }

# The exit trap: stop exactly the processes started here (by pid), then the verdict.
on_exit() {
	local status=$?
	trap - EXIT
	set +e
	proc_stop_all "$RUN_DIR" 5 "${PARTS[@]}" 2>/dev/null || fail "a process started here could not be stopped"
	verdict "$status"
	status=$?
	if [[ "$KEEP_RUN_DIR" == 1 || $status -ne 0 ]]; then
		log "logs kept in $RUN_DIR"
	else
		rm -rf "$RUN_DIR"
	fi
	exit "$status"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

build_seckill "$RUN_DIR"

free_ports DATA_PORT 5
M1=$((DATA_PORT + 1)) M2=$((DATA_PORT + 2)) M3=$((DATA_PORT + 3)) PORT=$((DATA_PORT + 4))
for r in "redis-data $DATA_PORT" "redis-1 $M1" "redis-2 $M2" "redis-3 $M3"; do
	read -r name port <<<"$r"
	redis_start "$RUN_DIR" "$name" "$port" || die "could not start $name"
	PARTS+=("$name")
	wait_for 10 "$name" redis_ping "$port" || die "$name on port $port does not answer"
done
proc_start "$RUN_DIR" seckill "$RUN_DIR" env \
	SECKILL_SERVER_HOST=127.0.0.1 SECKILL_SERVER_PORT="$PORT" SECKILL_SERVER_INSTANCE=bench-http \
	SECKILL_REDIS_ADDR="127.0.0.1:$DATA_PORT" SECKILL_REDIS_MASTERS="127.0.0.1:$M1,127.0.0.1:$M2,127.0.0.1:$M3" \
	SECKILL_REDIS_EMBEDDED=never SECKILL_LAB_ENABLED=true SECKILL_LOG_LEVEL=warn \
	SECKILL_INVENTORY_STOCK="$STOCK" "$RUN_DIR/seckill" serve || die "could not start seckill"
PARTS+=(seckill)
BASE="http://127.0.0.1:$PORT"
wait_for 20 "seckill on $PORT" http_ok "$BASE/readyz" || die "seckill does not get ready (log: $RUN_DIR/seckill.log)"
PID="$(proc_pid "$RUN_DIR" seckill)" || die "seckill is not running"
reset_stock "$BASE" "$STOCK" || die "reset to $STOCK failed"

# rss_mb: the instance's RSS in MB (one decimal).
rss_mb() {
	local kb
	kb="$(rss_kb "$PID")" || return 1
	awk -v k="$kb" 'BEGIN { printf "%.1f\n", k / 1024 }'
}
# sample_rss SECONDS FILE: one RSS sample (MB) per second into FILE, in the background.
sample_rss() {
	(for ((s = 0; s < $1; s++)); do
		rss_mb >>"$2" || break
		sleep 1
	done) &
	SAMPLER=$!
}
max_of() { sort -n "$1" | tail -n 1; }
# settle_goroutines IDLE: wait up to SETTLE seconds for go_goroutines <= IDLE + slack; prints it.
settle_goroutines() {
	local g i
	for ((i = 0; i <= SETTLE * 2; i++)); do
		g="$(metric "$PORT" go_goroutines)" || g=-1
		((g >= 0 && g <= $1 + GOROUTINE_SLACK)) && break
		sleep 0.5
	done
	printf '%s\n' "$g"
}

IDLE_G="$(metric "$PORT" go_goroutines)" || die "no go_goroutines in /metrics"
IDLE_RSS="$(rss_mb)"
log "seckill pid $PID on $BASE (redis data $DATA_PORT, masters $M1 $M2 $M3); idle: $IDLE_G goroutines, RSS $IDLE_RSS MB"
log "warm-up ${WARMUP}s on both endpoints"
hey -z "${WARMUP}s" -c "$CONCURRENCY" "$BASE/healthz" >/dev/null
hey -z "${WARMUP}s" -c "$CONCURRENCY" -m POST "$BASE/inventory/sale?lock=atomic" >/dev/null

: >"$RUN_DIR/rss.txt"
sample_rss $((2 * DURATION + 2)) "$RUN_DIR/rss.txt"
log "hey ${DURATION}s x $CONCURRENCY clients: GET /healthz"
hey -z "${DURATION}s" -c "$CONCURRENCY" "$BASE/healthz" >"$RUN_DIR/healthz.txt"
log "hey ${DURATION}s x $CONCURRENCY clients: POST /inventory/sale?lock=atomic"
hey -z "${DURATION}s" -c "$CONCURRENCY" -m POST "$BASE/inventory/sale?lock=atomic" >"$RUN_DIR/sale.txt"
wait "$SAMPLER" 2>/dev/null || true
eval "$(parse_hey "$RUN_DIR/healthz.txt")"
HZ=$H_RPS HZ_ST=$H_CODES
eval "$(parse_hey "$RUN_DIR/sale.txt")"
SALE=$H_RPS SALE_ST=$H_CODES SALE_OK=$H_200 SALE_ALL=$H_TOTAL
RATIO="$(awk -v a="$SALE" -v b="$HZ" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"
RSS_MAX="$(max_of "$RUN_DIR/rss.txt")"
AFTER_G="$(settle_goroutines "$IDLE_G")"
INV="$(curl -sf --max-time 5 "$BASE/inventory")" || die "GET /inventory failed"
LOST="$(printf '%s' "$INV" | sed -n 's/.*"lostUpdates":\(-\{0,1\}[0-9]*\).*/\1/p')"
SOLD="$(printf '%s' "$INV" | sed -n 's/.*"sold":\([0-9]*\).*/\1/p')"

printf '\nbench-http: one instance, %d CPU, %s clients, %ss each (after %ss warm-up), same run\n' "$(nproc)" "$CONCURRENCY" "$DURATION" "$WARMUP"
printf '  GET  /healthz                    %10.0f req/s   statuses %s\n' "$HZ" "$HZ_ST"
printf '  POST /inventory/sale?lock=atomic %10.0f req/s   statuses %s\n' "$SALE" "$SALE_ST"
printf '  ratio sale / healthz: %s (target >= %s)\n' "$RATIO" "$RATIO_TARGET"
printf '  RSS: idle %s MB, max %s MB during the load; goroutines: idle %s, %s after the load\n' \
	"$IDLE_RSS" "$RSS_MAX" "$IDLE_G" "$AFTER_G"
printf '  audit: sold %s (all runs), lost updates %s\n\n' "$SOLD" "$LOST"

check "sale rate $RATIO x healthz rate (want >= $RATIO_TARGET)" at_least "$RATIO" "$RATIO_TARGET"
check "every sale answered 200 ($SALE_ST)" only_200 "$SALE_OK" "$SALE_ALL"
check "lost updates: $LOST (want 0)" test "$LOST" = 0
check "RSS max $RSS_MAX MB during the load (want < $RSS_LIMIT_MB MB)" num_lt "$RSS_MAX" "$RSS_LIMIT_MB"
check "goroutines after the load: $AFTER_G (want <= idle $IDLE_G + $GOROUTINE_SLACK)" back_to_idle "$AFTER_G" "$IDLE_G"

if ((SOAK_SECONDS > 0)); then
	log "soak: hey ${SOAK_SECONDS}s x $SOAK_CONCURRENCY clients on POST /inventory/sale?lock=atomic"
	: >"$RUN_DIR/soak-rss.txt"
	sample_rss $((SOAK_SECONDS + 1)) "$RUN_DIR/soak-rss.txt"
	hey -z "${SOAK_SECONDS}s" -c "$SOAK_CONCURRENCY" -m POST "$BASE/inventory/sale?lock=atomic" >"$RUN_DIR/soak.txt"
	wait "$SAMPLER" 2>/dev/null || true
	SOAK_RSS="$(max_of "$RUN_DIR/soak-rss.txt")"
	SOAK_G="$(settle_goroutines "$IDLE_G")"
	eval "$(parse_hey "$RUN_DIR/soak.txt")"
	printf '\nsoak: %ss at %s clients: %.0f sales/s, statuses %s, RSS max %s MB over %s samples, goroutines %s after (idle %s)\n' \
		"$SOAK_SECONDS" "$SOAK_CONCURRENCY" "$H_RPS" "$H_CODES" \
		"$SOAK_RSS" "$(wc -l <"$RUN_DIR/soak-rss.txt")" "$SOAK_G" "$IDLE_G"
	check "soak RSS max $SOAK_RSS MB (want < $RSS_LIMIT_MB MB)" num_lt "$SOAK_RSS" "$RSS_LIMIT_MB"
	check "goroutines after the soak: $SOAK_G (want <= idle $IDLE_G + $GOROUTINE_SLACK)" back_to_idle "$SOAK_G" "$IDLE_G"
fi
((${#FAILURES[@]} == 0))
