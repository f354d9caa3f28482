#!/usr/bin/env bash
# soak.sh: load held. DURATION seconds at CONCURRENCY clients through nginx in one lock
# mode on the cluster of scripts/cluster.sh (its own temporary RUN_DIR, free ports, torn down
# on exit), and checks that the service holds:
#   - every answer is 200, 409 or 503, and no request fails at the transport level;
#   - the audit: 0 lost updates, 0 oversold, one sale per 200 answer;
#   - each instance's resident memory (VmRSS of /proc/PID/status, sampled every SAMPLE seconds,
#     and process_resident_memory_bytes from /metrics at the end) stays below RSS_LIMIT_MB;
#   - goroutines go back to idle within SETTLE seconds after the load: go_goroutines minus the
#     instance's open connections (each idle keep-alive connection from nginx parks one
#     goroutine until the server's idle timeout) is at most its idle value before the load plus
#     GOROUTINE_SLACK.
# Prints the figures; exit status 1 when any check failed.
#
# Environment (defaults in brackets): DURATION [60] seconds  CONCURRENCY [200]  MODE [reentrant]
#   STOCK [10000000]  RSS_LIMIT_MB [100]  SAMPLE [2] seconds  SETTLE [10] seconds
#   GOROUTINE_SLACK [10]  LOCK_LEASE, LOCK_WAIT (service defaults when empty)  KEEP_RUN_DIR [0]
#   SECKILL_BIN (a prebuilt binary; else cluster.sh builds one)
# Requires: redis-server, redis-cli, nginx, hey, curl, jq, awk, ss (apt: iproute2).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/testbed.sh
source "$ROOT/scripts/testbed.sh"

DURATION="${DURATION:-60}"
CONCURRENCY="${CONCURRENCY:-200}"
MODE="${MODE:-reentrant}"
STOCK="${STOCK:-10000000}"
RSS_LIMIT_MB="${RSS_LIMIT_MB:-100}"
SAMPLE="${SAMPLE:-2}"
SETTLE="${SETTLE:-10}"
GOROUTINE_SLACK="${GOROUTINE_SLACK:-10}"
export LOCK_MODE="$MODE" INSTANCES="${INSTANCES:-3}"

case "${1:-}" in -h | --help)
	usage
	exit 0
	;;
esac
need_whole DURATION CONCURRENCY STOCK RSS_LIMIT_MB SAMPLE SETTLE GOROUTINE_SLACK
((DURATION >= 5 && CONCURRENCY >= 1 && SAMPLE >= 1)) || die "need DURATION >= 5, CONCURRENCY >= 1, SAMPLE >= 1"
need_cmd hey hey
need_cmd curl curl
need_cmd jq jq
need_cmd ss iproute2

FAIL_MARK='!!' # fail (lib.sh) prints "  !! MSG" among the figures

INST=()
for ((i = 1; i <= INSTANCES; i++)); do INST+=("seckill-$i"); done

# conns PART: established TCP connections to the instance's port.
conns() { ss -Htn state established "( sport = :$(tb_port "$1") )" | wc -l; }
# idle PART: goroutines not accounted for by an open connection (see the header).
idle_goroutines() {
	local g c
	g="$(metric "$(tb_port "$1")" go_goroutines)" || return 1
	c="$(conns "$1")"
	printf '%s %s %s\n' $((g - c)) "$g" "$c"
}

tb_init soak
PASS_NOTE="($DURATION s at $CONCURRENCY clients, $MODE)"
printf 'soak: run dir %s; nginx on %s; %s clients for %s s in %s mode\n' "$RUN_DIR" "$NGINX_PORT" "$CONCURRENCY" "$DURATION" "$MODE"
tb_up
reset_stock "$URL" "$STOCK" || die "reset failed"
# Warm up (connections, pools, the lock's pub/sub), then let it go idle before the baseline.
hey -n 200 -c 10 -m POST "$URL/inventory/sale?lock=$MODE" >/dev/null 2>&1 || die "warm-up failed"
reset_stock "$URL" "$STOCK" || die "reset failed"
sleep 2
declare -A PID=() IDLE0=() MAXRSS=() MAXG=()
for p in "${INST[@]}"; do
	PID[$p]="$(tb_pid "$p")" || die "$p is not running"
	read -r "IDLE0[$p]" g c < <(idle_goroutines "$p") || die "$p: /metrics did not answer"
	MAXRSS[$p]="$(rss_kb "${PID[$p]}")" || die "$p (pid ${PID[$p]}) has no VmRSS"
	MAXG[$p]=0
	printf '  %-10s pid %-7s idle before: %s goroutines, %s connections (%s not on a connection); RSS %s kB\n' \
		"$p" "${PID[$p]}" "$g" "$c" "${IDLE0[$p]}" "${MAXRSS[$p]}"
done

out="$RUN_DIR/hey.txt"
tb_load_start "$out" "lock=$MODE" "$CONCURRENCY" "$DURATION" 30 text
next_report=10
while kill -0 "$TB_LOAD_PID" 2>/dev/null; do
	sleep "$SAMPLE"
	for p in "${INST[@]}"; do
		kb="$(rss_kb "${PID[$p]}")" || {
			fail "$p (pid ${PID[$p]}) is gone during the load"
			continue
		}
		((kb <= MAXRSS[$p])) || MAXRSS[$p]=$kb
		g="$(metric "$(tb_port "$p")" go_goroutines || echo 0)"
		((g <= MAXG[$p])) || MAXG[$p]=$g
	done
	at=$((($(tb_now_us) - TB_LOAD_T0) / 1000000))
	if ((at >= next_report)) && kill -0 "$TB_LOAD_PID" 2>/dev/null; then
		next_report=$((next_report + 10))
		line=""
		for p in "${INST[@]}"; do line+=" $p $((MAXRSS[$p] / 1024)) MB,"; done
		printf '  ... %3d s  sold %s; max RSS so far:%s goroutines now: %s\n' "$at" \
			"$(curl -sf --max-time 3 "$URL/inventory" | jq -r .sold || echo '?')" "${line%,}" \
			"$(for p in "${INST[@]}"; do metric "$(tb_port "$p")" go_goroutines || echo '?'; done | paste -sd/)"
	fi
done
tb_load_wait "$out" || fail "hey exited with status $? (see the warning above)"
t_end=$(tb_now_us)

# Answers: hey's status code and error distributions.
eval "$(parse_hey "$out")"
total=$H_TOTAL secs=$H_SECS rps=$H_RPS p50=$H_P50 p99=$H_P99 c200=$H_200 c409=$H_409 c503=$H_503 other=$H_OTHER errors=$H_ERRORS
printf '\n  answers       %d in %s s (%s req/s): 200 %d, 409 %d, 503 %d, other %d, transport errors %d\n' \
	"$total" "$secs" "$rps" "$c200" "$c409" "$c503" "$other" "$errors"
printf '  latency       p50 %s ms, p99 %s ms\n' "$p50" "$p99"
((other == 0)) || fail "$other answers other than 200/409/503: $H_CODES"
((errors == 0)) || fail "$errors requests failed at the transport level: $(sed -n '/^Error distribution:/,/^$/p' "$out" | head -5 | tr -s ' \n' ' ')"
((c200 > 0)) || fail "nothing was sold"

# Goroutines back to idle.
for p in "${INST[@]}"; do
	settled="" last=""
	for ((i = 0; i < SETTLE * 2; i++)); do
		if read -r idle g c < <(idle_goroutines "$p"); then
			last="$g goroutines, $c connections ($idle not on a connection)"
			if ((idle <= IDLE0[$p] + GOROUTINE_SLACK)); then
				settled="$((($(tb_now_us) - t_end) / 100000))"
				break
			fi
		fi
		sleep 0.5
	done
	if [[ -n "$settled" ]]; then
		printf '  %-10s goroutines: peak %d during the load (sampled), idle again %d.%d s after it: %s; before: %s not on a connection\n' \
			"$p" "${MAXG[$p]}" $((settled / 10)) $((settled % 10)) "$last" "${IDLE0[$p]}"
	else
		fail "$p: goroutines not back to idle ${SETTLE} s after the load: ${last:-/metrics did not answer}; before: ${IDLE0[$p]} not on a connection (+$GOROUTINE_SLACK allowed)"
	fi
done

# Memory.
limit_kb=$((RSS_LIMIT_MB * 1024))
for p in "${INST[@]}"; do
	prom="$(metric "$(tb_port "$p")" process_resident_memory_bytes || echo 0)"
	printf '  %-10s max RSS during the load %d.%d MB (VmRSS every %s s); process_resident_memory_bytes now %d.%d MB\n' \
		"$p" $((MAXRSS[$p] / 1024)) $((MAXRSS[$p] % 1024 * 10 / 1024)) "$SAMPLE" $((prom / 1048576)) $((prom % 1048576 * 10 / 1048576))
	((MAXRSS[$p] < limit_kb)) || fail "$p: RSS reached $((MAXRSS[$p] / 1024)) MB, limit $RSS_LIMIT_MB MB"
	((prom < limit_kb * 1024)) || fail "$p: process_resident_memory_bytes $prom, limit $RSS_LIMIT_MB MB"
	[[ "$(tb_pid "$p" || true)" == "${PID[$p]}" ]] || fail "$p restarted or died during the soak"
done

# The audit.
inv="$(inventory_settled "$URL")" || die "GET /inventory did not answer"
read -r sold stock init lost over < <(jq -r '[.sold, .stock, .initialStock, .lostUpdates, .oversold] | @tsv' <<<"$inv")
printf '  audit         sold %d, stock %d of %d, lost updates %d, oversold %d; by instance %s\n' "$sold" "$stock" "$init" "$lost" "$over" \
	"$(jq -r '.soldByInstance | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(" ")' <<<"$inv")"
((lost == 0)) || fail "$lost lost updates"
((over == 0)) || fail "oversold $over"
((sold == c200)) || fail "sold $sold but $c200 answers were 200"
((${#FAILURES[@]} == 0))
