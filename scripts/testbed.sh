# shellcheck shell=bash
# testbed.sh: the test harness around scripts/cluster.sh, shared by e2e.sh, e2e-cluster.sh,
# e2e-sentinel.sh, chaos.sh and soak.sh. Source it after lib.sh, whose helpers it uses and never
# redefines (every helper of scripts/ is defined once: the generic ones in lib.sh, the ones about
# a cluster.sh run under test here, named tb_*). It defines functions only (and CLUSTER), and
# changes no shell option.
#
#   tb_init NAME         a fresh RUN_DIR (mktemp) and a block of free ports, exported for cluster.sh;
#                        an EXIT trap (tb_exit) that tears the cluster down (tb_teardown) and ends
#                        with lib.sh's verdict (set PASS_NOTE, FAIL_NOTE, REPORT for it)
#   tb_teardown          cluster.sh down, then proof that none of the processes it started is left
#   tb_up, tb_up_part    cluster.sh up (all, or one part again), its output into RUN_DIR/up.log
#   tb_pid PART          the pid of a part, only while it is still the process cluster.sh started
#   tb_port PART         the port of a part (redis-data, redis-N, seckill-N, nginx)
#   tb_load_start F Q C SECONDS TIMEOUT [text]   hey through nginx (POST /inventory/sale?Q) in the
#                        background, C clients for SECONDS, one CSV line per answer into F (see
#                        tb_at), or with "text" hey's report (see parse_hey)
#   tb_load_wait F       wait for that hey; tb_at: seconds since it started (ms resolution)
#   tb_answers, tb_count, tb_others, tb_first_after   the answers of a CSV load, by time and status
#
# The timeline: hey -o csv writes, per answer, its response time and its start offset from hey's
# own start (Go's process start, a few ms after tb_load_start records T0). So "answer ended at"
# is offset + response time, on the same clock as the events tb_at records. Transport errors
# (a client timeout) have no CSV line: hey lists answers only.

CLUSTER="$ROOT/scripts/cluster.sh"
TB_LOAD_PID=""
TB_LOAD_T0=0
TB_TORN_DOWN=""
TB_STAMPS=()

# tb_now_us: wall clock in microseconds (bash's EPOCHREALTIME, whatever the decimal separator).
tb_now_us() { printf '%s\n' "${EPOCHREALTIME//[!0-9]/}"; }

# tb_at: seconds since the current load started, as S.mmm.
tb_at() {
	local d=$(($(tb_now_us) - TB_LOAD_T0))
	printf '%d.%03d\n' $((d / 1000000)) $((d % 1000000 / 1000))
}

# tb_sleep_until SECONDS: sleep until SECONDS (S.mmm) after the load started.
tb_sleep_until() {
	local want us
	want=$(awk -v s="$1" 'BEGIN { printf "%d", s * 1000000 }')
	us=$((TB_LOAD_T0 + want - $(tb_now_us)))
	((us <= 0)) || sleep "$(awk -v u="$us" 'BEGIN { printf "%.3f", u / 1000000 }')"
}

# tb_pick_ports: one block of consecutive free ports (lib.sh's free_ports) for data, 3 masters,
# the instances and nginx, exported for cluster.sh.
tb_pick_ports() {
	local base
	free_ports base $((4 + INSTANCES + 1))
	export DATA_PORT=$base MASTER_PORTS="$((base + 1)) $((base + 2)) $((base + 3))"
	export SERVICE_PORT=$((base + 4)) NGINX_PORT=$((base + 4 + INSTANCES))
}

tb_port() {
	case "$1" in
	redis-data) printf '%s\n' "$DATA_PORT" ;;
	redis-[0-9]*)
		local ports
		read -r -a ports <<<"$MASTER_PORTS"
		printf '%s\n' "${ports[$((${1#redis-} - 1))]}"
		;;
	seckill-[0-9]*) printf '%s\n' $((SERVICE_PORT + ${1#seckill-} - 1)) ;;
	nginx) printf '%s\n' "$NGINX_PORT" ;;
	*) die "tb_port: unknown part $1" ;;
	esac
}

tb_pid() { proc_pid "$RUN_DIR" "$1"; }

tb_init() {
	INSTANCES="${INSTANCES:-3}"
	tb_pick_ports
	# The run dir last, right before the trap that removes it: nothing before may leave it behind.
	RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/seckill-$1.XXXXXX")"
	export RUN_DIR INSTANCES
	URL="http://127.0.0.1:$NGINX_PORT"
	trap tb_exit EXIT
	trap 'exit 130' INT TERM
}

tb_record_stamps() {
	local f name pid start
	TB_STAMPS=()
	for f in "$RUN_DIR"/*.pid; do
		[[ -e "$f" ]] || continue
		name="$(basename "$f" .pid)"
		read -r pid <"$f" || continue
		read -r start _ <"$RUN_DIR/$name.stamp" || continue
		TB_STAMPS+=("$name $pid $start")
	done
}

# tb_teardown: stop everything the cluster started; fail (return 1) if any process is left.
tb_teardown() {
	[[ -z "$TB_TORN_DOWN" ]] || return 0
	TB_TORN_DOWN=1
	if [[ -n "$TB_LOAD_PID" ]] && kill -0 "$TB_LOAD_PID" 2>/dev/null; then kill -INT "$TB_LOAD_PID" 2>/dev/null || true; fi
	local f name pid start now left=() s
	# A part left stopped (SIGSTOP) by an interrupted case would sit on its SIGTERM: resume it first.
	for f in "$RUN_DIR"/*.pid; do
		[[ -e "$f" ]] || continue
		name="$(basename "$f" .pid)"
		if pid="$(tb_pid "$name")"; then kill -CONT "$pid" 2>/dev/null || true; fi
	done
	tb_record_stamps
	"$CLUSTER" down >"$RUN_DIR/down.log" 2>&1 || {
		cat "$RUN_DIR/down.log" >&2
		return 1
	}
	for s in "${TB_STAMPS[@]}"; do
		read -r name pid start <<<"$s"
		if now="$(proc_start_time "$pid")" && [[ "$now" == "$start" ]]; then left+=("$name (pid $pid)"); fi
	done
	if ((${#left[@]} > 0)); then
		warn "processes left behind after down: ${left[*]}"
		return 1
	fi
	log "cluster down, no process left behind (${#TB_STAMPS[@]} checked)"
}

# tb_exit: the EXIT trap: the teardown, the last lines of the logs when something failed, then
# lib.sh's verdict (its status is the script's).
tb_exit() {
	local rc=$?
	set +e
	tb_teardown || fail "teardown: cluster.sh down failed, or left a process behind"
	((${#FAILURES[@]} == 0)) || ((rc != 0)) || rc=1
	if ((rc != 0)); then
		local f n
		for f in "$RUN_DIR"/*.log "$RUN_DIR"/nginx/logs/error.log; do
			[[ -s "$f" ]] || continue
			n=12
			[[ "$(basename "$f")" != redis-* ]] || n=4
			printf '\n--- last lines of %s\n' "$f" >&2
			tail -n "$n" "$f" >&2
		done
	fi
	verdict "$rc"
	rc=$?
	if [[ "${KEEP_RUN_DIR:-0}" == 1 ]]; then log "run dir kept: $RUN_DIR"; else rm -rf "$RUN_DIR"; fi
	exit "$rc"
}

tb_up() {
	"$CLUSTER" up >"$RUN_DIR/up.log" 2>&1 || {
		tail -n 20 "$RUN_DIR/up.log" >&2
		die "cluster.sh up failed"
	}
}

# tb_up_part PART: start one part again (cluster.sh up PART) and wait until it answers.
tb_up_part() {
	"$CLUSTER" up "$1" >>"$RUN_DIR/up.log" 2>&1 || {
		tail -n 20 "$RUN_DIR/up.log" >&2
		return 1
	}
}

tb_load_start() {
	local file="$1" query="$2" conc="$3" secs="$4" timeout="$5" csv=(-o csv)
	[[ "${6:-csv}" != text ]] || csv=()
	TB_LOAD_T0=$(tb_now_us)
	hey -z "${secs}s" -c "$conc" -t "$timeout" -m POST "${csv[@]}" "$URL/inventory/sale?$query" >"$file" 2>"$file.err" &
	TB_LOAD_PID=$!
}

tb_load_wait() {
	local rc=0
	wait "$TB_LOAD_PID" || rc=$?
	TB_LOAD_PID=""
	((rc == 0)) || warn "hey exited with status $rc: $(head -c 300 "$1.err" 2>/dev/null)"
	return "$rc"
}

# tb_answers FILE [FROM [TO [BY]]]: answers by status ("200=12 503=4"), of the requests that
# started at or after FROM and ended at or before TO (seconds since the load started; BY=end
# counts the requests that ended in [FROM, TO] whenever they started).
tb_answers() {
	awk -F, -v from="${2:-0}" -v to="${3:-1e9}" -v by="${4:-start}" '
		NR == 1 || NF < 8 { next }
		{ s = $8 + 0; e = $8 + $1; lo = (by == "end") ? e : s; if (lo >= from && e <= to) n[$7]++ }
		END { out = ""; for (c in n) out = out sprintf("%s=%d ", c, n[c]); sub(/ $/, "", out); print (out == "" ? "none" : out) }' "$1" |
		tr ' ' '\n' | sort -t= -k1,1n | paste -sd' '
}

# tb_count ANSWERS STATUS: the count of STATUS in a tb_answers line (0 when absent).
tb_count() {
	local w
	for w in $1; do
		if [[ "${w%%=*}" == "$2" ]]; then
			printf '%s\n' "${w#*=}"
			return
		fi
	done
	printf '0\n'
}

# tb_others ANSWERS ALLOWED...: the part of ANSWERS whose status is not ALLOWED ("" when none).
tb_others() {
	local line="$1" w out=""
	shift
	for w in $line; do
		[[ "$w" == none || " $* " == *" ${w%%=*} "* ]] || out+="${out:+ }$w"
	done
	printf '%s\n' "$out"
}

# tb_first_after FILE T STATUS: seconds from T to the end of the first STATUS answer ending after
# T ("" when none).
tb_first_after() {
	awk -F, -v t="$2" -v st="$3" '
		NR == 1 || NF < 8 { next }
		$7 == st { e = $8 + $1; if (e > t && (best == "" || e < best)) best = e }
		END { if (best != "") printf "%.3f\n", best - t }' "$1"
}
