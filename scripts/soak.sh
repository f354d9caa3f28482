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
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
esac
for v in DURATION CONCURRENCY STOCK RSS_LIMIT_MB SAMPLE SETTLE GOROUTINE_SLACK; do
	[[ "${!v}" =~ ^[0-9]+$ ]] || die "$v=${!v} is not a whole number"
done
((DURATION >= 5 && CONCURRENCY >= 1 && SAMPLE >= 1)) || die "need DURATION >= 5, CONCURRENCY >= 1, SAMPLE >= 1"
need_cmd hey hey
need_cmd curl curl
need_cmd jq jq
need_cmd ss iproute2

FAILS=()
bad() {
	FAILS+=("$*")
	printf '  !! %s\n' "$*"
}

INST=()
for ((i = 1; i <= INSTANCES; i++)); do INST+=("seckill-$i"); done

# metric PART NAME: a metric of the instance, read directly from its port (awk reads to the end:
# an early exit would fail curl with SIGPIPE).
metric() {
	curl -sf --max-time 3 "http://127.0.0.1:$(tb_port "$1")/metrics" | awk -v n="$2" '$1 == n && !seen { printf "%d\n", $2; seen = 1 } END { exit !seen }'
}
# conns PART: established TCP connections to the instance's port.
conns() { ss -Htn state established "( sport = :$(tb_port "$1") )" | wc -l; }
# idle PART: goroutines not accounted for by an open connection (see the header).
idle_goroutines() {
	local g c
	g="$(metric "$1" go_goroutines)" || return 1
	c="$(conns "$1")"
	printf '%s %s %s\n' $((g - c)) "$g" "$c"
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

tb_on_exit() {
	if (($1 != 0)) || ((${#FAILS[@]} > 0)); then
		printf '\nsoak: FAILED\n'
		((${#FAILS[@]} == 0)) || printf '  %s\n' "${FAILS[@]}"
	else
		printf '\nsoak: PASSED (%s s at %s clients, %s)\n' "$DURATION" "$CONCURRENCY" "$MODE"
	fi
}

tb_init soak
printf 'soak: run dir %s; nginx on %s; %s clients for %s s in %s mode\n' "$RUN_DIR" "$NGINX_PORT" "$CONCURRENCY" "$DURATION" "$MODE"
tb_up
tb_reset "$STOCK" || die "reset failed"
# Warm up (connections, pools, the lock's pub/sub), then let it go idle before the baseline.
hey -n 200 -c 10 -m POST "$URL/inventory/sale?lock=$MODE" >/dev/null 2>&1 || die "warm-up failed"
tb_reset "$STOCK" || die "reset failed"
sleep 2
declare -A PID=() IDLE0=() MAXRSS=() MAXG=()
for p in "${INST[@]}"; do
	PID[$p]="$(tb_pid "$p")" || die "$p is not running"
	read -r "IDLE0[$p]" g c < <(idle_goroutines "$p") || die "$p: /metrics did not answer"
	MAXRSS[$p]="$(rss_kb "${PID[$p]}")"
	MAXG[$p]=0
	printf '  %-10s pid %-7s idle before: %s goroutines, %s connections (%s not on a connection); RSS %s kB\n' \
		"$p" "${PID[$p]}" "$g" "$c" "${IDLE0[$p]}" "${MAXRSS[$p]}"
done

out="$RUN_DIR/hey.txt"
TB_LOAD_T0=$(tb_now_us)
hey -z "${DURATION}s" -c "$CONCURRENCY" -t 30 -m POST "$URL/inventory/sale?lock=$MODE" >"$out" 2>&1 &
TB_LOAD_PID=$!
next_report=10
while kill -0 "$TB_LOAD_PID" 2>/dev/null; do
	sleep "$SAMPLE"
	for p in "${INST[@]}"; do
		kb="$(rss_kb "${PID[$p]}")"
		[[ -n "$kb" ]] || {
			bad "$p (pid ${PID[$p]}) is gone during the load"
			continue
		}
		((kb <= MAXRSS[$p])) || MAXRSS[$p]=$kb
		g="$(metric "$p" go_goroutines || echo 0)"
		((g <= MAXG[$p])) || MAXG[$p]=$g
	done
	at=$((($(tb_now_us) - TB_LOAD_T0) / 1000000))
	if ((at >= next_report)) && kill -0 "$TB_LOAD_PID" 2>/dev/null; then
		next_report=$((next_report + 10))
		line=""
		for p in "${INST[@]}"; do line+=" $p $((MAXRSS[$p] / 1024)) MB,"; done
		printf '  ... %3d s  sold %s; max RSS so far:%s goroutines now: %s\n' "$at" \
			"$(curl -sf --max-time 3 "$URL/inventory" | jq -r .sold || echo '?')" "${line%,}" \
			"$(for p in "${INST[@]}"; do metric "$p" go_goroutines || echo '?'; done | paste -sd/)"
	fi
done
rc=0
wait "$TB_LOAD_PID" || rc=$?
TB_LOAD_PID=""
((rc == 0)) || bad "hey exited with status $rc"
t_end=$(tb_now_us)

# Answers: hey's status code and error distributions.
read -r total secs rps p50 p99 c200 c409 c503 other errors < <(awk '
	/^  Total:/ { secs = $2 }
	/^  Requests\/sec:/ { rps = $2 }
	/^  50% in / { p50 = $3 * 1000 }
	/^  99% in / { p99 = $3 * 1000 }
	/^Status code distribution:/ { sec = "status"; next }
	/^Error distribution:/ { sec = "error"; next }
	/^[^ ]/ { sec = "" }
	sec == "status" && match($0, /\[[0-9]+\]/) {
		code = substr($0, RSTART + 1, RLENGTH - 2); n = $2
		if (code == 200 || code == 409 || code == 503) s[code] += n; else other += n
		total += n
	}
	sec == "error" && match($0, /^  \[[0-9]+\]/) { n = substr($0, RSTART + 3, RLENGTH - 4); errors += n; total += n }
	END { printf "%d %.1f %.0f %.1f %.1f %d %d %d %d %d\n", total, secs, rps, p50, p99, s[200], s[409], s[503], other, errors }' "$out")
printf '\n  answers       %d in %s s (%s req/s): 200 %d, 409 %d, 503 %d, other %d, transport errors %d\n' \
	"$total" "$secs" "$rps" "$c200" "$c409" "$c503" "$other" "$errors"
printf '  latency       p50 %s ms, p99 %s ms\n' "$p50" "$p99"
((other == 0)) || bad "$other answers other than 200/409/503: $(sed -n '/^Status code distribution:/,/^$/p' "$out" | tr -s ' \n' ' ')"
((errors == 0)) || bad "$errors requests failed at the transport level: $(sed -n '/^Error distribution:/,/^$/p' "$out" | head -5 | tr -s ' \n' ' ')"
((c200 > 0)) || bad "nothing was sold"

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
		bad "$p: goroutines not back to idle ${SETTLE} s after the load: ${last:-/metrics did not answer}; before: ${IDLE0[$p]} not on a connection (+$GOROUTINE_SLACK allowed)"
	fi
done

# Memory.
limit_kb=$((RSS_LIMIT_MB * 1024))
for p in "${INST[@]}"; do
	prom="$(metric "$p" process_resident_memory_bytes || echo 0)"
	printf '  %-10s max RSS during the load %d.%d MB (VmRSS every %s s); process_resident_memory_bytes now %d.%d MB\n' \
		"$p" $((MAXRSS[$p] / 1024)) $((MAXRSS[$p] % 1024 * 10 / 1024)) "$SAMPLE" $((prom / 1048576)) $((prom % 1048576 * 10 / 1048576))
	((MAXRSS[$p] < limit_kb)) || bad "$p: RSS reached $((MAXRSS[$p] / 1024)) MB, limit $RSS_LIMIT_MB MB"
	((prom < limit_kb * 1024)) || bad "$p: process_resident_memory_bytes $prom, limit $RSS_LIMIT_MB MB"
	[[ "$(tb_pid "$p" || true)" == "${PID[$p]}" ]] || bad "$p restarted or died during the soak"
done

# The audit.
inv="$(tb_audit)" || die "GET /inventory did not answer"
read -r sold stock init lost over < <(jq -r '[.sold, .stock, .initialStock, .lostUpdates, .oversold] | @tsv' <<<"$inv")
printf '  audit         sold %d, stock %d of %d, lost updates %d, oversold %d; by instance %s\n' "$sold" "$stock" "$init" "$lost" "$over" \
	"$(jq -r '.soldByInstance | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(" ")' <<<"$inv")"
((lost == 0)) || bad "$lost lost updates"
((over == 0)) || bad "oversold $over"
((sold == c200)) || bad "sold $sold but $c200 answers were 200"
((${#FAILS[@]} == 0))
