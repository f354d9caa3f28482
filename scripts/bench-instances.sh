#!/usr/bin/env bash
# bench-instances.sh: the bench over HTTP, several real service processes behind nginx. Starts
# scripts/cluster.sh (one data Redis, 3 masters, INSTANCES seckill processes, nginx, on free
# ports in a temporary RUN_DIR; torn down by PID on exit), then for every mode of MODES runs
# `seckill bench --url` against nginx: CONCURRENCY buyers fire POST /inventory/sale?lock=MODE in
# a closed loop for DURATION seconds (after WARMUP), from a stock that never runs out. Prints per
# mode: sales/s, p50/p99 of every request in the window (failed ones included), the audit (lost
# updates, oversold) and the median lock wait each instance reported (its answers' waitMs).
# Exit status 1 when a mode lost an update or oversold.
#
# Environment (defaults in brackets): INSTANCES [8]  MODES ["lua fair"]  CONCURRENCY [64]
#   DURATION [10] seconds  WARMUP [1] seconds  LOCK_WAIT [10s]  JSON (a file for the JSON report)
#   SECKILL_BIN (a prebuilt binary; else go build)
# Requires: redis-server, nginx, curl, jq (and go unless SECKILL_BIN is set).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/testbed.sh
source "$ROOT/scripts/testbed.sh"

MODES="${MODES:-lua fair}"
CONCURRENCY="${CONCURRENCY:-64}"
DURATION="${DURATION:-10}"
WARMUP="${WARMUP:-1}"
JSON="${JSON:-}"
export INSTANCES="${INSTANCES:-8}" LOCK_WAIT="${LOCK_WAIT:-10s}" LOG_LEVEL="${LOG_LEVEL:-warn}"

case "${1:-}" in -h | --help)
	usage
	exit 0
	;;
esac
need_whole INSTANCES CONCURRENCY DURATION WARMUP
need_cmd jq jq
need_cmd curl curl

tb_init bench-instances
PASS_NOTE="($INSTANCES instances behind nginx, $CONCURRENCY buyers, ${MODES// /, })"
printf 'bench-instances: run dir %s; %s instances behind nginx on %s\n' "$RUN_DIR" "$INSTANCES" "$NGINX_PORT"
tb_up
modes="${MODES// /,}"
out="$RUN_DIR/bench.json"
"$RUN_DIR/seckill" bench --url "$URL" --modes "$modes" --concurrency "$CONCURRENCY" --report-only \
	--duration "${DURATION}s" --warmup "${WARMUP}s" --wait "$LOCK_WAIT" --json >"$out" ||
	die "seckill bench --url failed"
[[ -z "$JSON" ]] || cp "$out" "$JSON"
printf '\n%-10s %7s %9s %9s %9s %6s %5s %9s  %s\n' mode buyers sales/s "p50 ms" "p99 ms" Jain lost oversold "median lock wait by instance, ms"
while IFS=$'\t' read -r name buyers rate p50 p99 jain lost over waits; do
	printf '%-10s %7s %9.0f %9.2f %9.2f %6.3f %5s %9s  %s\n' "$name" "$buyers" "$rate" "$p50" "$p99" "$jain" "$lost" "$over" "$waits"
	((lost == 0 && over == 0)) || fail "$name: $lost lost updates, $over oversold"
done < <(jq -r '.cells[] | [.strategy, .buyers, .salesPerSec, .p50Ms, .p99Ms, .jain, .lostUpdates, .oversold,
	([range(0; (.instanceNames // []) | length) as $i | "\(.instanceNames[$i]) \(.instanceP50Ms[$i])"] | join(", "))] | @tsv' "$out")
