#!/usr/bin/env bash
# loadtest.sh: fire sales through nginx for one or several lock modes and end in a verdict.
#
#   scripts/loadtest.sh [MODE...]     default: none lua reentrant multilock redlock fenced redlock-fenced fair atomic
#   scripts/loadtest.sh all           every mode the server knows
#
# Per mode: POST /inventory/reset?stock=STOCK, then REQUESTS sales (POST /inventory/sale?lock=MODE)
# at CONCURRENCY with hey, bounded by TIME seconds, then the audit from GET /inventory. Then the
# history check: the stock reset to HISTORY_STOCK, HISTORY_REQUESTS sales fired by `seckill load`,
# which records every answer and when it came, and checks that history for linearizability with
# porcupine (trusting none of the service's counters). Prints per mode: requests, status counts,
# sold, stock left, lost updates, oversold, requests/s, p50/p99 latency, sales per instance and the
# history's verdict; then a summary table.
#
# Exit status 1 when a safe mode (every mode but UNSAFE_MODES) lost an update, oversold, sold a
# number different from its 200 answers, (EXACT=1) did not sell exactly min(STOCK, REQUESTS), or
# its history was not linearizable.
# Unsafe modes only report whether their anomaly showed. A mode the server does not know (its 400
# answer lists validModes) stops the script before any sale, with exit status 1; REQUIRE_ALL=0
# skips such a mode with a warning instead.
#
# Environment (defaults in brackets):
#   URL [http://127.0.0.1:8000]  STOCK [500]  REQUESTS [2000]  CONCURRENCY [50]  TIME [120] seconds per mode
#   HEY_TIMEOUT [30] seconds per request  SALE_QUERY (extra sale parameters, e.g. workMs=5)  SKU (optional)
#   UNSAFE_MODES ["none setnx setnx-expire setnx-ex uuid"]  EXACT [1]  REQUIRE_ALL [1]
#   RESULTS (a file to write the results to, tab-separated, one line per mode)  PROGRESS [2] seconds
#   ADMIN_TOKEN (sent as X-Admin-Token with the reset, when server.adminToken is set)
#   HISTORY [1] (0: no history check)  HISTORY_STOCK [100]  HISTORY_REQUESTS [300]
#   SECKILL_BIN (the seckill binary for `seckill load`; else go build into a temp dir)
#   HEY (a hey binary; else `hey` on PATH (apt: hey), else github.com/rakyll/hey@v0.1.4 built with go)
# Requires: curl, jq, timeout (coreutils), hey or go.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

URL="${URL:-http://127.0.0.1:8000}"
URL="${URL%/}"
STOCK="${STOCK:-500}"
REQUESTS="${REQUESTS:-2000}"
CONCURRENCY="${CONCURRENCY:-50}"
TIME="${TIME:-120}"
HEY_TIMEOUT="${HEY_TIMEOUT:-30}"
SALE_QUERY="${SALE_QUERY:-}"
SKU="${SKU:-}"
UNSAFE_MODES="${UNSAFE_MODES:-none setnx setnx-expire setnx-ex uuid}"
EXACT="${EXACT:-1}"
REQUIRE_ALL="${REQUIRE_ALL:-1}"
RESULTS="${RESULTS:-}"
PROGRESS="${PROGRESS:-2}"
ADMIN_TOKEN="${ADMIN_TOKEN:-}"
HISTORY="${HISTORY:-1}"
HISTORY_STOCK="${HISTORY_STOCK:-100}"
HISTORY_REQUESTS="${HISTORY_REQUESTS:-300}"
HEY_VERSION=v0.1.4
DEFAULT_MODES=(none lua reentrant multilock redlock fenced redlock-fenced fair atomic)

case "${1:-}" in -h | --help)
	usage
	exit 0
	;;
esac
need_whole STOCK REQUESTS CONCURRENCY TIME HEY_TIMEOUT PROGRESS HISTORY_STOCK HISTORY_REQUESTS
((CONCURRENCY >= 1 && REQUESTS >= CONCURRENCY)) || die "need 1 <= CONCURRENCY ($CONCURRENCY) <= REQUESTS ($REQUESTS) (hey's rule)"
((TIME >= 1 && PROGRESS >= 1)) || die "TIME and PROGRESS must be at least 1"

need_cmd curl curl
need_cmd jq jq
need_cmd timeout coreutils

# ---- hey -------------------------------------------------------------------------------------
find_hey() {
	if [[ -n "${HEY:-}" ]]; then
		[[ -x "$HEY" ]] || die "HEY=$HEY is not an executable"
		return
	fi
	if HEY="$(command -v hey)"; then return; fi
	local dir="${XDG_CACHE_HOME:-$HOME/.cache}/seckill/hey-$HEY_VERSION"
	HEY="$dir/hey"
	[[ -x "$HEY" ]] && return
	need_cmd go golang "or install hey: sudo apt-get install hey"
	log "hey not on PATH: building github.com/rakyll/hey@$HEY_VERSION into $dir"
	mkdir -p "$dir"
	GOBIN="$dir" go install "github.com/rakyll/hey@$HEY_VERSION" || die "could not build hey; install it with 'sudo apt-get install hey'"
}

# ---- the service -----------------------------------------------------------------------------
q_sku() { [[ -z "$SKU" ]] || printf '&sku=%s' "$SKU"; }
inventory() { curl -sf --max-time 5 "$URL/inventory?x=1$(q_sku)" | jq -c .; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/seckill-loadtest.XXXXXX")"
HEY_PID=""
cleanup() {
	# Only our own hey (started below) is ever signalled.
	if [[ -n "$HEY_PID" ]] && kill -0 "$HEY_PID" 2>/dev/null; then kill -INT "$HEY_PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# The server names its modes in the 400 answer to an unknown one; nothing is sold by that probe.
probe="$(curl -s --max-time 5 "$URL/inventory/sale?lock=-probe-$(q_sku)" || true)"
[[ -n "$probe" ]] || die "nothing answers at $URL (start the cluster: scripts/cluster.sh up)"
mapfile -t VALID < <(jq -r '.validModes[]? // empty' <<<"$probe" 2>/dev/null || true)
((${#VALID[@]} > 0)) || die "$URL/inventory/sale did not list validModes; answer: ${probe:0:300}"

MODES=("$@")
((${#MODES[@]} > 0)) || MODES=("${DEFAULT_MODES[@]}")
if [[ "${MODES[*]}" == all ]]; then MODES=("${VALID[@]}"); fi

is_valid() { [[ " ${VALID[*]} " == *" $1 "* ]]; }
is_safe() { [[ " $UNSAFE_MODES " != *" $1 "* ]]; }

ROWS=()
FAILED=()
joined() {
	local out="" r
	for r in "$@"; do out+="${out:+; }$r"; done
	printf '%s' "$out"
}
row() {
	local IFS=$'\t'
	ROWS+=("$*")
}

# table: tab-separated lines on stdin as aligned columns (awk, so no extra package is needed).
table() {
	awk -F '\t' '
		{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } if (NF > nf) nf = NF }
		END { for (r = 1; r <= NR; r++) { line = ""; for (i = 1; i <= nf; i++) line = line sprintf("%-" w[i] "s  ", cell[r, i]); sub(/ +$/, "", line); print line } }'
}

run_mode() {
	local mode="$1" out rc=0 started inv i verdict reasons=() safe=unsafe
	is_safe "$mode" && safe=safe
	printf '\n== %s (%s): %d sales at concurrency %d through %s, stock %d\n' "$mode" "$safe" "$REQUESTS" "$CONCURRENCY" "$URL" "$STOCK"
	if ! reset_stock "$URL" "$STOCK" "$SKU"; then
		printf '  reset failed (see the warning above)\n'
		row "$mode" FAIL - - - - - - - - - - - - - - "reset failed"
		FAILED+=("$mode: reset failed")
		return
	fi

	out="$TMP/hey-$mode.txt"
	local sale_url
	sale_url="$URL/inventory/sale?lock=$mode$(q_sku)${SALE_QUERY:+&$SALE_QUERY}"
	started=$SECONDS
	# hey prints its report on SIGINT too, so a run cut short by TIME still has figures.
	timeout -s INT -k 10 "$TIME" "$HEY" -n "$REQUESTS" -c "$CONCURRENCY" -t "$HEY_TIMEOUT" -m POST "$sale_url" >"$out" 2>&1 &
	HEY_PID=$!
	while kill -0 "$HEY_PID" 2>/dev/null; do
		for ((i = 0; i < PROGRESS * 10; i++)); do
			kill -0 "$HEY_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$HEY_PID" 2>/dev/null || break
		inv="$(inventory || true)"
		[[ -n "$inv" ]] && printf '  ... %-10s %3ds  sold %s, stock %s\n' "$mode" $((SECONDS - started)) \
			"$(jq -r .sold <<<"$inv")" "$(jq -r .stock <<<"$inv")" >&2
	done
	wait "$HEY_PID" || rc=$?
	HEY_PID=""
	if ((rc == 124)); then reasons+=("hey cut short after TIME=${TIME}s"); elif ((rc != 0)); then
		reasons+=("hey exited with status $rc")
		sed 's/^/  hey: /' "$out" | tail -n 5
	fi

	# Requests abandoned by the client may still finish on the server: wait until the audit is stable.
	if ! inv="$(inventory_settled "$URL" "$SKU")"; then
		printf '  GET /inventory failed\n'
		row "$mode" FAIL - - - - - - - - - - - - - - "GET /inventory failed"
		FAILED+=("$mode: GET /inventory failed")
		return
	fi

	# shellcheck disable=SC2034 # set by the eval below, not every one read
	local H_SECS H_RPS H_P50 H_P99 H_200 H_409 H_503 H_OTHER H_ERRORS H_TOTAL H_CODES
	eval "$(parse_hey "$out")"
	local sold stock lost over stale foreign overlaps by
	sold="$(jq -r .sold <<<"$inv")"
	stock="$(jq -r .stock <<<"$inv")"
	lost="$(jq -r .lostUpdates <<<"$inv")"
	over="$(jq -r .oversold <<<"$inv")"
	stale="$(jq -r .staleWritesRejected <<<"$inv")"
	foreign="$(jq -r .foreignUnlocks <<<"$inv")"
	overlaps="$(jq -r .overlaps <<<"$inv")"
	by="$(jq -r '.soldByInstance // {} | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(" ")' <<<"$inv")"
	local want=$((STOCK < REQUESTS ? STOCK : REQUESTS))

	# The history: every answer as the client saw it, checked against a stock counter.
	local history=- history_out
	if [[ "$HISTORY" == 1 ]]; then
		if reset_stock "$URL" "$HISTORY_STOCK" "$SKU"; then
			local args=(load --url "$URL" --lock "$mode" --n "$HISTORY_REQUESTS" --c "$CONCURRENCY"
				--timeout "${HEY_TIMEOUT}s" --time "${TIME}s" --history-dir "$TMP")
			[[ -z "$SKU" ]] || args+=(--sku "$SKU")
			[[ -z "$SALE_QUERY" ]] || args+=(--query "$SALE_QUERY")
			# seckill load exits 1 when the history is NOT linearizable: read the verdict either way.
			history_out="$("$TMP/seckill" "${args[@]}" 2>&1)" || true
			history="$(sed -n 's/^history: .*: \(linearizable\|NOT linearizable\|unknown (timeout)\|n\/a: .*\)$/\1/p' <<<"$history_out")"
			if [[ -z "$history" ]]; then
				history=error
				sed 's/^/  load: /' <<<"$history_out" | tail -n 3
			fi
		else
			history="reset failed"
		fi
		if [[ "$safe" == safe && "$history" != linearizable ]]; then reasons+=("history: $history"); fi
	fi

	if [[ "$safe" == safe ]]; then
		((lost == 0)) || reasons+=("$lost lost updates")
		((over == 0)) || reasons+=("oversold $over")
		((sold == H_200)) || reasons+=("sold $sold but $H_200 answers were 200")
		if [[ "$EXACT" == 1 ]] && ((sold != want)); then
			reasons+=("sold $sold, expected exactly min(stock, requests) = $want ($H_503 answered 503, $H_ERRORS client errors)")
		fi
		if ((${#reasons[@]} == 0)); then verdict=PASS; else
			verdict=FAIL
			FAILED+=("$mode: $(joined "${reasons[@]}")")
		fi
	else
		if ((lost > 0 || over > 0 || foreign > 0 || overlaps > 0)); then verdict=ANOMALY; else verdict=no-anomaly; fi
	fi

	printf '  requests      %d in %ss (200: %d, 409: %d, 503: %d, other: %d, client errors: %d)\n' \
		"$H_TOTAL" "$H_SECS" "$H_200" "$H_409" "$H_503" "$H_OTHER" "$H_ERRORS"
	printf '  sold          %d of stock %d, stock left %d\n' "$sold" "$STOCK" "$stock"
	printf '  lost updates  %d, oversold %d (foreign unlocks %d, overlaps %d, stale writes rejected %d)\n' \
		"$lost" "$over" "$foreign" "$overlaps" "$stale"
	printf '  throughput    %s req/s, latency p50 %s ms, p99 %s ms\n' "$H_RPS" "$H_P50" "$H_P99"
	printf '  by instance   %s\n' "${by:-(none)}"
	[[ "$HISTORY" != 1 ]] || printf '  history       %s (%d sales from stock %d, checked with porcupine)\n' "$history" "$HISTORY_REQUESTS" "$HISTORY_STOCK"
	case "$verdict" in
	PASS) printf '  verdict       PASS: sold exactly %d, one per 200 answer, no lost update, no oversell\n' "$sold" ;;
	FAIL) printf '  verdict       FAIL: %s\n' "$(joined "${reasons[@]}")" ;;
	ANOMALY) printf '  verdict       ANOMALY shown, as expected of an unsafe mode (%d lost updates, oversold %d)\n' "$lost" "$over" ;;
	*) printf '  verdict       no anomaly this run (an unsafe mode; try more CONCURRENCY or SALE_QUERY=workMs=5)\n' ;;
	esac
	row "$mode" "$verdict" "$H_TOTAL" "$H_200" "$H_409" "$H_503" "$((H_OTHER + H_ERRORS))" "$sold" "$stock" "$lost" "$over" \
		"$H_RPS" "$H_P50" "$H_P99" "${by// /,}" "$history" "$(joined "${reasons[@]}")"
}

find_hey
log "hey: $HEY; modes known to the server: ${VALID[*]}"
if [[ "$REQUIRE_ALL" == 1 ]]; then
	for mode in "${MODES[@]}"; do
		is_valid "$mode" || die "mode $mode is unknown to the server at $URL (it knows: ${VALID[*]}; REQUIRE_ALL=0 skips it instead)"
	done
fi
if [[ "$HISTORY" == 1 ]]; then build_seckill "$TMP"; fi
for mode in "${MODES[@]}"; do
	if ! is_valid "$mode"; then
		warn "mode $mode is unknown to the server at $URL (it knows: ${VALID[*]}); skipped"
		row "$mode" SKIPPED - - - - - - - - - - - - - - "unknown to the server"
		[[ "$REQUIRE_ALL" != 1 ]] || FAILED+=("$mode: unknown to the server (REQUIRE_ALL=1)")
		continue
	fi
	run_mode "$mode"
done

header=(mode verdict requests 200 409 503 other sold left lost oversold req/s p50ms p99ms by_instance history notes)
printf '\nSummary (stock %d, %d requests at concurrency %d through %s):\n' "$STOCK" "$REQUESTS" "$CONCURRENCY" "$URL"
row "${header[@]}"
hdr="${ROWS[-1]}"
unset 'ROWS[-1]'
{
	printf '%s\n' "$hdr"
	((${#ROWS[@]} == 0)) || printf '%s\n' "${ROWS[@]}"
} >"$TMP/results.tsv"
cut -f1-16 "$TMP/results.tsv" | table
[[ -z "$RESULTS" ]] || cp "$TMP/results.tsv" "$RESULTS"
if ((${#FAILED[@]} > 0)); then
	printf '\nFAILED:\n'
	printf '  %s\n' "${FAILED[@]}"
	exit 1
fi
printf '\nNo safe mode lost an update, oversold or sold other than expected.\n'
