# shellcheck shell=bash
# lib.sh: the helpers every script in scripts/ shares; each is defined here once and nowhere else.
# Source it first; scripts/testbed.sh (the test harness around cluster.sh) builds on it. It
# defines functions, ROOT and the variables of the verdict (FAILURES and the others below, empty),
# and changes no shell option.
#
# Process records: a part NAME started by proc_start has, in RUN_DIR,
#   NAME.pid    its pid (one line, the usual pid-file format, so other tools can read it)
#   NAME.stamp  "<start time in clock ticks since boot> <resolved executable path>"
#   NAME.log    its stdout and stderr
# The stamp lets proc_pid and proc_stop prove that a pid still belongs to the process we started
# (pids are reused), so nothing but our own processes is ever signalled.
#
# The Go side has the same starters for tests and the lab: internal/redisproc starts redis-server,
# a Redis Cluster and Sentinel on free loopback ports and stops them by pid (see redis_start here
# and start_KIND in cluster.sh).

# shellcheck disable=SC2034 # used by the scripts that source this file
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

_me="$(basename "$0")"
log() { printf '%s: %s\n' "$_me" "$*" >&2; }
warn() { printf '%s: WARNING: %s\n' "$_me" "$*" >&2; }
die() {
	printf '%s: ERROR: %s\n' "$_me" "$*" >&2
	exit 1
}

# usage: the script's header comment (from line 2 to `set -euo ...`), without the '# '.
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# need_cmd BIN PACKAGE [HINT]: fail with the apt package to install when BIN is not on PATH.
need_cmd() {
	command -v "$1" >/dev/null 2>&1 && return 0
	die "$1 not found on PATH: install it with 'sudo apt-get install $2'${3:+ ($3)}"
}

# need_whole VAR...: fail unless each variable named holds a whole number (digits only).
need_whole() {
	local v
	for v in "$@"; do
		[[ "${!v}" =~ ^[0-9]+$ ]] || die "$v=${!v} is not a whole number"
	done
}

# num_lt A B: A < B, for decimal numbers (awk, as bash compares integers only).
num_lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# proc_start_time PID: the process start time (field 22 of /proc/PID/stat), empty if gone.
proc_start_time() {
	local stat rest
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	# The command name (field 2) may contain spaces and parentheses: split after the last ')'.
	rest="${stat##*) }"
	# shellcheck disable=SC2086 # word splitting is the point
	set -- $rest
	# rest starts at field 3 (state); a zombie has finished even if its pid still shows.
	[[ "$1" != Z ]] || return 1
	printf '%s\n' "${20}"
}

# proc_pid RUN_DIR NAME: print the pid of part NAME when it runs and is still the process we
# started (same start time and executable); return 1 otherwise.
proc_pid() {
	local dir="$1" name="$2" pid start exe now_start now_exe
	[[ -f "$dir/$name.pid" && -f "$dir/$name.stamp" ]] || return 1
	read -r pid <"$dir/$name.pid" || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	read -r start exe <"$dir/$name.stamp" || return 1
	now_start="$(proc_start_time "$pid")" || return 1
	[[ "$now_start" == "$start" ]] || return 1
	now_exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
	# A binary replaced on disk while running shows as "PATH (deleted)".
	[[ "${now_exe% (deleted)}" == "$exe" ]] || return 1
	printf '%s\n' "$pid"
}

# proc_start RUN_DIR NAME WORKDIR CMD [ARGS...]: start CMD in the background in its own session
# (so a Ctrl-C on the calling terminal does not reach it), output to RUN_DIR/NAME.log, and record
# its pid and stamp. The environment is inherited: set variables with `env` in CMD.
proc_start() {
	local dir="$1" name="$2" wd="$3" pid start exe i
	shift 3
	mkdir -p "$wd"
	# The subshell is not a process-group leader (no job control in scripts), so setsid calls
	# setsid(2) and execs without forking: $! is the pid of CMD itself.
	(cd "$wd" && exec setsid "$@") >>"$dir/$name.log" 2>&1 </dev/null &
	pid=$!
	# The stamp needs the exec to have happened: wait (bounded) until /proc shows the final program.
	exe=""
	for ((i = 0; i < 50; i++)); do
		exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
		case "$exe" in
		"" | */bash | */sh | */dash | */setsid | */env) sleep 0.05 ;;
		*) break ;;
		esac
	done
	start="$(proc_start_time "$pid")" || {
		warn "$name exited at once; last lines of $dir/$name.log:"
		tail -n 20 "$dir/$name.log" >&2 || true
		return 1
	}
	[[ -n "$exe" ]] || {
		warn "$name (pid $pid) did not exec within 2.5s"
		return 1
	}
	printf '%s\n' "$pid" >"$dir/$name.pid"
	printf '%s %s\n' "$start" "${exe% (deleted)}" >"$dir/$name.stamp"
}

# proc_stop RUN_DIR NAME [GRACE_SECONDS]: stop part NAME if it is still the process we started:
# SIGTERM, then SIGKILL after GRACE_SECONDS (default 10). Removes its pid and stamp files.
# A pid file whose process is gone or belongs to another program is removed without signalling.
proc_stop() {
	local dir="$1" name="$2" grace="${3:-10}" pid i
	if ! pid="$(proc_pid "$dir" "$name")"; then
		if [[ -f "$dir/$name.pid" ]]; then
			log "$name: not running (stale pid file removed)"
		fi
		rm -f "$dir/$name.pid" "$dir/$name.stamp"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < grace * 10; i++)); do
		proc_pid "$dir" "$name" >/dev/null || break
		sleep 0.1
	done
	if proc_pid "$dir" "$name" >/dev/null; then
		warn "$name (pid $pid) still runs ${grace}s after SIGTERM: sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do
			proc_pid "$dir" "$name" >/dev/null || break
			sleep 0.1
		done
	fi
	if proc_pid "$dir" "$name" >/dev/null; then
		warn "$name (pid $pid) survived SIGKILL"
		return 1
	fi
	rm -f "$dir/$name.pid" "$dir/$name.stamp"
	log "$name: stopped (pid $pid)"
}

# proc_stop_all RUN_DIR GRACE NAME...: proc_stop each part, the last named first; fails (after
# trying every one) when one could not be stopped.
proc_stop_all() {
	local dir="$1" grace="$2" i rc=0
	shift 2
	for ((i = $#; i >= 1; i--)); do
		proc_stop "$dir" "${!i}" "$grace" || rc=1
	done
	return "$rc"
}

# port_in_use PORT: something accepts connections on 127.0.0.1:PORT.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# port_holder PORT: who listens on PORT, as "name (pid N)" from `ss -ltnp`, or a hint when ss
# cannot say (not installed, or the process belongs to another user).
port_holder() {
	local users
	users="$(ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'users:(([^)]*))' | head -n 1 || true)"
	if [[ "$users" =~ \(\(\"([^\"]+)\",pid=([0-9]+) ]]; then
		printf '%s (pid %s)' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
	else
		printf 'a process ss -ltnp cannot name (another user'"'"'s?)'
	fi
}

# free_ports VAR N [OFFSET]: set VAR to the first of N consecutive free ports of 127.0.0.1 (with
# OFFSET, each port + OFFSET is free too: a Redis Cluster node's bus port), none of them handed out
# by an earlier call, all below the kernel's ephemeral range: a port inside it can be taken,
# between the check and the bind, as the local end of some outgoing connection (the instances'
# own Redis connections, for one). Call it in the script's shell, not in $(...), so that the
# ports it hands out are remembered (PORTS_TAKEN).
PORTS_TAKEN=" "
free_ports() {
	# Locals with a prefix: printf -v sets VAR in the caller only if no local here has its name.
	local _fp_n="${2:-1}" _fp_off="${3:-0}" _fp_lo=32768 _fp_hi _fp_try _fp_base _fp_p _fp_ok
	read -r _fp_lo _fp_hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || _fp_lo=32768
	((_fp_lo - _fp_n - _fp_off > 11000)) || _fp_lo=32768
	for ((_fp_try = 0; _fp_try < 50; _fp_try++)); do
		_fp_base=$((10000 + RANDOM % (_fp_lo - _fp_n - _fp_off - 10000)))
		_fp_ok=1
		for ((_fp_p = _fp_base; _fp_p < _fp_base + _fp_n; _fp_p++)); do
			if [[ "$PORTS_TAKEN" == *" $_fp_p "* ]] || port_in_use "$_fp_p" ||
				{ ((_fp_off > 0)) && { [[ "$PORTS_TAKEN" == *" $((_fp_p + _fp_off)) "* ]] || port_in_use $((_fp_p + _fp_off)); }; }; then
				_fp_ok=""
				break
			fi
		done
		if [[ -n "$_fp_ok" ]]; then
			for ((_fp_p = _fp_base; _fp_p < _fp_base + _fp_n; _fp_p++)); do
				PORTS_TAKEN+="$_fp_p "
				((_fp_off == 0)) || PORTS_TAKEN+="$((_fp_p + _fp_off)) "
			done
			printf -v "$1" '%s' "$_fp_base"
			return 0
		fi
	done
	die "no block of $_fp_n free ports${3:+ (with their ports + $_fp_off)} found in 50 tries"
}

# http_status URL [CURL ARGS...]: print the HTTP status of URL (000 when nothing answers).
http_status() {
	local url="$1"
	shift
	curl -s -o /dev/null -w '%{http_code}' --connect-timeout 1 --max-time 3 "$@" "$url" 2>/dev/null || true
}

# http_ok URL [CURL ARGS...]: URL answers 200.
http_ok() { [[ "$(http_status "$@")" == 200 ]]; }

# wait_for SECONDS WHAT CMD [ARGS...]: run CMD every 0.2s until it succeeds or SECONDS pass.
wait_for() {
	local secs="$1" what="$2" deadline
	shift 2
	deadline=$((SECONDS + secs))
	while ((SECONDS < deadline)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	"$@" >/dev/null 2>&1 && return 0
	warn "$what: not ready after ${secs}s"
	return 1
}

# ---- redis-server -----------------------------------------------------------------------------
# redis_start RUN_DIR NAME PORT [REDIS-SERVER ARGS...]: start part NAME, a redis-server on
# 127.0.0.1:PORT without persistence (it starts empty and leaves nothing behind), working in
# RUN_DIR/NAME, logging to RUN_DIR/NAME.log; extra arguments (--replicaof, --cluster-enabled ...)
# come last. Does not wait: see redis_ping.
redis_start() {
	local dir="$1" name="$2" port="$3"
	shift 3
	proc_start "$dir" "$name" "$dir/$name" redis-server --bind 127.0.0.1 --port "$port" \
		--daemonize no --save '' --appendonly no --dir "$dir/$name" --logfile '' \
		--protected-mode yes --maxclients 4000 "$@"
}

# redis_ping PORT: the Redis on 127.0.0.1:PORT answers PONG.
redis_ping() { [[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" == PONG ]]; }

# ---- the service --------------------------------------------------------------------------------
# build_seckill DIR: DIR/seckill, a copy of SECKILL_BIN when it is set, else built from the
# repository (go build; replaced in one step, so a running copy keeps its binary).
build_seckill() {
	local dir="$1" bin="${SECKILL_BIN:-}"
	if [[ -n "$bin" ]]; then
		[[ -x "$bin" ]] || die "SECKILL_BIN=$bin is not an executable"
		cp -f "$bin" "$dir/seckill.new" && mv -f "$dir/seckill.new" "$dir/seckill"
		return
	fi
	need_cmd go golang "Go >= 1.26 from https://go.dev/dl, or set SECKILL_BIN to a prebuilt binary"
	log "building the service: go build -o $dir/seckill ."
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$dir/seckill.new" .) || die "go build failed"
	mv -f "$dir/seckill.new" "$dir/seckill"
}

# reset_stock URL STOCK [SKU]: POST URL/inventory/reset (X-Admin-Token when ADMIN_TOKEN is set);
# says why on stderr and fails unless it answers 200.
reset_stock() {
	local auth=() out
	[[ -z "${ADMIN_TOKEN:-}" ]] || auth=(-H "X-Admin-Token: $ADMIN_TOKEN")
	out="$(curl -s --max-time 10 -X POST "${auth[@]}" -w '\n%{http_code}' "$1/inventory/reset?stock=$2${3:+&sku=$3}")" || true
	[[ "${out##*$'\n'}" == 200 ]] || {
		warn "reset failed: ${out//$'\n'/ }"
		return 1
	}
}

# inventory_settled URL [SKU]: GET URL/inventory (compact JSON) once two reads 0.3 s apart agree:
# sales abandoned by a client may still be finishing on the server. Fails when nothing answers
# for 10 s.
inventory_settled() {
	local url="$1/inventory${2:+?sku=$2}" prev="" inv="" i
	for ((i = 0; i < 33; i++)); do
		inv="$(curl -sf --max-time 3 "$url" | jq -c . 2>/dev/null || true)"
		[[ -n "$inv" && "$inv" == "$prev" ]] && break
		prev="$inv"
		sleep 0.3
	done
	[[ -n "$inv" ]] || return 1
	printf '%s\n' "$inv"
}

# metric PORT NAME: the first sample of NAME (a series as /metrics prints it, labels included)
# from http://127.0.0.1:PORT/metrics, as an integer; fails when it is absent. awk reads to the
# end: an early exit would fail curl with SIGPIPE.
metric() {
	curl -sf --max-time 3 "http://127.0.0.1:$1/metrics" |
		awk -v n="$2" '$1 == n && !seen { printf "%d\n", $2; seen = 1 } END { exit !seen }'
}

# rss_kb PID: the resident memory (VmRSS) of PID in kB; fails when it has gone.
rss_kb() {
	local kb
	kb="$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null)" || true
	[[ -n "$kb" ]] || return 1
	printf '%s\n' "$kb"
}

# parse_hey FILE: hey's text report as shell assignments, for eval: H_SECS H_RPS H_P50 H_P99 (ms),
# the answers H_200 H_409 H_503 H_OTHER, H_ERRORS (transport errors: no answer), H_TOTAL, and
# H_CODES, every status as "200:N 503:M".
parse_hey() {
	awk '
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
			codes = codes (codes == "" ? "" : " ") code ":" n
			total += n
		}
		sec == "error" && match($0, /^  \[[0-9]+\]/) {
			n = substr($0, RSTART + 3, RLENGTH - 4); errors += n; total += n
		}
		END {
			printf "H_SECS=%.2f\nH_RPS=%.1f\nH_P50=%.1f\nH_P99=%.1f\n", secs, rps, p50, p99
			printf "H_200=%d\nH_409=%d\nH_503=%d\nH_OTHER=%d\nH_ERRORS=%d\nH_TOTAL=%d\n", s[200], s[409], s[503], other, errors, total
			printf "H_CODES=\"%s\"\n", codes
		}' "$1"
}

# ---- checks and the verdict of a test script ----------------------------------------------------
# fail MSG: a check failed: MSG joins FAILURES and is printed, as "NAME: FAIL: MSG" on stderr, or,
# in a script that prints its figures as an indented report and sets FAIL_MARK (e.g. "!!"), as
# "  FAIL_MARK MSG" on stdout among them.
# verdict RC: the closing lines of a test script, and its exit status. First REPORT (lines the
# script collected, e.g. one per case), then, when RC is not 0 or a check failed, "NAME: FAILED"
# (and FAIL_NOTE) and every failed check on stderr, returning RC, or 1; else "NAME: PASSED" (and
# PASS_NOTE) on stdout, returning 0.
FAILURES=()
FAIL_MARK=""
FAIL_NOTE=""
PASS_NOTE=""
REPORT=()
fail() {
	FAILURES+=("$*")
	if [[ -n "$FAIL_MARK" ]]; then
		printf '  %s %s\n' "$FAIL_MARK" "$*"
	else
		printf '%s: FAIL: %s\n' "${_me%.sh}" "$*" >&2
	fi
}
verdict() {
	local rc="$1"
	if ((${#REPORT[@]} > 0)); then
		printf '\n'
		printf '%s\n' "${REPORT[@]}"
	fi
	if ((rc != 0)) || ((${#FAILURES[@]} > 0)); then
		printf '\n%s: FAILED%s\n' "${_me%.sh}" "${FAIL_NOTE:+ $FAIL_NOTE}" >&2
		((${#FAILURES[@]} == 0)) || printf '  %s\n' "${FAILURES[@]}" >&2
		((rc != 0)) || rc=1
		return "$rc"
	fi
	printf '\n%s: PASSED%s\n' "${_me%.sh}" "${PASS_NOTE:+ $PASS_NOTE}"
}
