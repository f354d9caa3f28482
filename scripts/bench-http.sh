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
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument $arg (use --soak or --help)" ;;
	esac
done
for v in DURATION CONCURRENCY WARMUP SOAK_SECONDS SOAK_CONCURRENCY RSS_LIMIT_MB SETTLE GOROUTINE_SLACK; do
	[[ "${!v}" =~ ^[0-9]+$ ]] || die "$v=${!v} is not a whole number"
done
((DURATION >= 1 && DURATION <= 600 && CONCURRENCY >= 1 && SOAK_SECONDS <= 600)) ||
	die "need 1 <= DURATION <= 600, CONCURRENCY >= 1, SOAK_SECONDS <= 600"
need_cmd redis-server redis-server
need_cmd hey hey
need_cmd curl curl

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/seckill-bench-http.XXXXXX")"
PARTS=()
FAILS=()
bad() {
	FAILS+=("$*")
	printf '  FAIL %s\n' "$*"
}
ok() { printf '  PASS %s\n' "$*"; }
# check MESSAGE CMD [ARGS...]: PASS when CMD succeeds, else FAIL.
check() {
	local msg="$1"
	shift
	if "$@"; then ok "$msg"; else bad "$msg"; fi
}
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
only_200() { [[ "$1" =~ ^200:[0-9]+\ $ ]]; }
# back_to_idle NOW IDLE: a goroutine count was read and is within the slack of the idle one.
back_to_idle() { (($1 >= 0 && $1 <= $2 + GOROUTINE_SLACK)); }

on_exit() {
	local status=$? p
	trap - EXIT
	for ((p = ${#PARTS[@]} - 1; p >= 0; p--)); do
		proc_stop "$RUN_DIR" "${PARTS[p]}" 5 2>/dev/null || status=1
	done
	if [[ "$KEEP_RUN_DIR" == 1 || $status -ne 0 ]]; then
		log "logs kept in $RUN_DIR"
	else
		rm -rf "$RUN_DIR"
	fi
	exit "$status"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# free_port: a free port below the kernel's ephemeral range (a port inside it could be taken as
# the local end of an outgoing connection between the check and the bind), not handed out before.
TAKEN=" "
free_port() {
	local lo=32768 _hi p i
	read -r lo _hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	((lo > 11000)) || lo=32768
	for ((i = 0; i < 200; i++)); do
		p=$((10000 + RANDOM % (lo - 10000)))
		[[ "$TAKEN" != *" $p "* ]] || continue
		port_in_use "$p" && continue
		TAKEN+="$p "
		printf '%s\n' "$p"
		return 0
	done
	die "no free port found"
}

start_redis() { # NAME PORT
	proc_start "$RUN_DIR" "$1" "$RUN_DIR" redis-server --port "$2" --bind 127.0.0.1 --save "" \
		--appendonly no --protected-mode no --dir "$RUN_DIR" || die "could not start $1"
	PARTS+=("$1")
	wait_for 10 "$1" redis-cli -p "$2" ping || die "$1 on port $2 does not answer"
}

BIN="${SECKILL_BIN:-}"
if [[ -z "$BIN" ]]; then
	need_cmd go golang-go
	log "building seckill into $RUN_DIR"
	(cd "$ROOT" && go build -o "$RUN_DIR/seckill" .) || die "go build failed"
	BIN="$RUN_DIR/seckill"
fi

DATA_PORT="$(free_port)"
M1="$(free_port)" M2="$(free_port)" M3="$(free_port)"
PORT="$(free_port)"
start_redis redis-data "$DATA_PORT"
start_redis redis-1 "$M1"
start_redis redis-2 "$M2"
start_redis redis-3 "$M3"
proc_start "$RUN_DIR" seckill "$RUN_DIR" env \
	SECKILL_SERVER_HOST=127.0.0.1 SECKILL_SERVER_PORT="$PORT" SECKILL_SERVER_INSTANCE=bench-http \
	SECKILL_REDIS_ADDR="127.0.0.1:$DATA_PORT" SECKILL_REDIS_MASTERS="127.0.0.1:$M1,127.0.0.1:$M2,127.0.0.1:$M3" \
	SECKILL_REDIS_EMBEDDED=never SECKILL_LAB_ENABLED=true SECKILL_LOG_LEVEL=warn \
	SECKILL_INVENTORY_STOCK="$STOCK" "$BIN" serve || die "could not start seckill"
PARTS+=(seckill)
BASE="http://127.0.0.1:$PORT"
wait_for 20 "seckill on $PORT" curl -sf --max-time 2 "$BASE/readyz" || die "seckill does not get ready (log: $RUN_DIR/seckill.log)"
PID="$(proc_pid "$RUN_DIR" seckill)" || die "seckill is not running"
[[ "$(http_status "$BASE/inventory/reset?stock=$STOCK" -X POST)" == 200 ]] || die "reset to $STOCK failed"

metric() { # NAME: first sample of a metric from /metrics, as an integer
	curl -sf --max-time 3 "$BASE/metrics" | awk -v n="$1" '$1 == n && !seen { printf "%d\n", $2; seen = 1 } END { exit !seen }'
}
rss_mb() { awk '/^VmRSS:/ { printf "%.1f\n", $2 / 1024 }' "/proc/$PID/status" 2>/dev/null; }
# sample_rss SECONDS FILE: one RSS sample (MB) per second into FILE, in the background.
sample_rss() {
	(for ((s = 0; s < $1; s++)); do
		rss_mb >>"$2" || break
		sleep 1
	done) &
	SAMPLER=$!
}
max_of() { sort -n "$1" | tail -n 1; }
# rate FILE: requests/sec from a hey summary.
rate() { awk '/Requests\/sec:/ { print $2 }' "$1"; }
# statuses FILE: the status code distribution of a hey summary, as "200:N 503:M".
statuses() { awk '/^Status code distribution:/ { on = 1; next } on && /\[[0-9]+\]/ { gsub(/[\[\]]/, "", $1); printf "%s:%s ", $1, $2 } on && /^$/ { on = 0 }' "$1"; }
# settle_goroutines IDLE: wait up to SETTLE seconds for go_goroutines <= IDLE + slack; prints it.
settle_goroutines() {
	local g i
	for ((i = 0; i <= SETTLE * 2; i++)); do
		g="$(metric go_goroutines)" || g=-1
		((g >= 0 && g <= $1 + GOROUTINE_SLACK)) && break
		sleep 0.5
	done
	printf '%s\n' "$g"
}

IDLE_G="$(metric go_goroutines)" || die "no go_goroutines in /metrics"
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
HZ="$(rate "$RUN_DIR/healthz.txt")"
SALE="$(rate "$RUN_DIR/sale.txt")"
RATIO="$(awk -v a="$SALE" -v b="$HZ" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"
RSS_MAX="$(max_of "$RUN_DIR/rss.txt")"
AFTER_G="$(settle_goroutines "$IDLE_G")"
INV="$(curl -sf --max-time 5 "$BASE/inventory")" || die "GET /inventory failed"
LOST="$(printf '%s' "$INV" | sed -n 's/.*"lostUpdates":\(-\{0,1\}[0-9]*\).*/\1/p')"
SOLD="$(printf '%s' "$INV" | sed -n 's/.*"sold":\([0-9]*\).*/\1/p')"
HZ_ST="$(statuses "$RUN_DIR/healthz.txt")"
SALE_ST="$(statuses "$RUN_DIR/sale.txt")"

printf '\nbench-http: one instance, %d CPU, %s clients, %ss each (after %ss warm-up), same run\n' "$(nproc)" "$CONCURRENCY" "$DURATION" "$WARMUP"
printf '  GET  /healthz                    %10.0f req/s   statuses %s\n' "$HZ" "$HZ_ST"
printf '  POST /inventory/sale?lock=atomic %10.0f req/s   statuses %s\n' "$SALE" "$SALE_ST"
printf '  ratio sale / healthz: %s (target >= %s)\n' "$RATIO" "$RATIO_TARGET"
printf '  RSS: idle %s MB, max %s MB during the load; goroutines: idle %s, %s after the load\n' \
	"$IDLE_RSS" "$RSS_MAX" "$IDLE_G" "$AFTER_G"
printf '  audit: sold %s (all runs), lost updates %s\n\n' "$SOLD" "$LOST"

check "sale rate $RATIO x healthz rate (want >= $RATIO_TARGET)" at_least "$RATIO" "$RATIO_TARGET"
check "every sale answered 200 ($SALE_ST)" only_200 "$SALE_ST"
check "lost updates: $LOST (want 0)" test "$LOST" = 0
check "RSS max $RSS_MAX MB during the load (want < $RSS_LIMIT_MB MB)" below "$RSS_MAX" "$RSS_LIMIT_MB"
check "goroutines after the load: $AFTER_G (want <= idle $IDLE_G + $GOROUTINE_SLACK)" back_to_idle "$AFTER_G" "$IDLE_G"

if ((SOAK_SECONDS > 0)); then
	log "soak: hey ${SOAK_SECONDS}s x $SOAK_CONCURRENCY clients on POST /inventory/sale?lock=atomic"
	: >"$RUN_DIR/soak-rss.txt"
	sample_rss $((SOAK_SECONDS + 1)) "$RUN_DIR/soak-rss.txt"
	hey -z "${SOAK_SECONDS}s" -c "$SOAK_CONCURRENCY" -m POST "$BASE/inventory/sale?lock=atomic" >"$RUN_DIR/soak.txt"
	wait "$SAMPLER" 2>/dev/null || true
	SOAK_RSS="$(max_of "$RUN_DIR/soak-rss.txt")"
	SOAK_G="$(settle_goroutines "$IDLE_G")"
	printf '\nsoak: %ss at %s clients: %.0f sales/s, statuses %s, RSS max %s MB over %s samples, goroutines %s after (idle %s)\n' \
		"$SOAK_SECONDS" "$SOAK_CONCURRENCY" "$(rate "$RUN_DIR/soak.txt")" "$(statuses "$RUN_DIR/soak.txt")" \
		"$SOAK_RSS" "$(wc -l <"$RUN_DIR/soak-rss.txt")" "$SOAK_G" "$IDLE_G"
	check "soak RSS max $SOAK_RSS MB (want < $RSS_LIMIT_MB MB)" below "$SOAK_RSS" "$RSS_LIMIT_MB"
	check "goroutines after the soak: $SOAK_G (want <= idle $IDLE_G + $GOROUTINE_SLACK)" back_to_idle "$SOAK_G" "$IDLE_G"
fi

if ((${#FAILS[@]} > 0)); then
	printf '\nbench-http: %d check(s) FAILED\n' "${#FAILS[@]}"
	exit 1
fi
printf '\nbench-http: every check passed\n'
