# shellcheck shell=bash
# Shared helpers for scripts/cluster.sh, loadtest.sh and e2e.sh (and later chaos scripts).
# Source it; it defines functions and ROOT only, and changes no shell option.
#
# Process records: a part NAME started by proc_start has, in RUN_DIR,
#   NAME.pid    its pid (one line, the usual pid-file format, so other tools can read it)
#   NAME.stamp  "<start time in clock ticks since boot> <resolved executable path>"
#   NAME.log    its stdout and stderr
# The stamp lets proc_pid and proc_stop prove that a pid still belongs to the process we started
# (pids are reused), so nothing but our own processes is ever signalled.

# shellcheck disable=SC2034 # used by the scripts that source this file
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

_me="$(basename "$0")"
log() { printf '%s: %s\n' "$_me" "$*" >&2; }
warn() { printf '%s: WARNING: %s\n' "$_me" "$*" >&2; }
die() {
	printf '%s: ERROR: %s\n' "$_me" "$*" >&2
	exit 1
}

# need_cmd BIN PACKAGE [HINT]: fail with the apt package to install when BIN is not on PATH.
need_cmd() {
	command -v "$1" >/dev/null 2>&1 && return 0
	die "$1 not found on PATH: install it with 'sudo apt-get install $2'${3:+ ($3)}"
}

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

# port_in_use PORT: something accepts connections on 127.0.0.1:PORT.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# http_status URL [CURL ARGS...]: print the HTTP status of URL (000 when nothing answers).
http_status() {
	local url="$1"
	shift
	curl -s -o /dev/null -w '%{http_code}' --connect-timeout 1 --max-time 3 "$@" "$url" 2>/dev/null || true
}

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
