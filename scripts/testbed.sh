# shellcheck shell=bash
# testbed.sh: shared by scripts/chaos.sh and scripts/soak.sh. Source it after lib.sh; it defines
# functions only (and CLUSTER), and changes no shell option.
#
#   tb_init NAME         a fresh RUN_DIR (mktemp) and a block of free ports, exported for cluster.sh;
#                        an EXIT trap that tears the cluster down (tb_teardown) and runs tb_on_exit
#   tb_teardown          cluster.sh down, then proof that none of the processes it started is left
#   tb_pid PART          the pid of a part, only while it is still the process cluster.sh started
#   tb_port PART         the port of a part (redis-data, redis-N, seckill-N, nginx)
#   tb_load_start F Q C SECONDS TIMEOUT   hey through nginx (POST /inventory/sale?Q) in the background,
#                        C clients for SECONDS, one CSV line per answer into F (see tb_at)
#   tb_load_wait         wait for that hey; tb_at: seconds since it started (ms resolution)
#   tb_audit             GET /inventory once the figures have stopped moving (JSON on stdout)
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

# tb_pick_ports: a block of consecutive free ports (data, 3 masters, the instances, nginx) below
# the kernel's ephemeral range: a port inside it can be taken, between the check and the bind, as
# the local end of some outgoing connection (the instances' own Redis connections, for one).
tb_pick_ports() {
	local try base p n=$((4 + INSTANCES + 1)) ok lo=32768 _hi
	read -r lo _hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	((lo - n > 11000)) || lo=32768
	for ((try = 0; try < 30; try++)); do
		base=$((10000 + RANDOM % (lo - n - 10000)))
		ok=1
		for ((p = base; p < base + n; p++)); do
			if port_in_use "$p"; then
				ok=""
				break
			fi
		done
		if [[ -n "$ok" ]]; then
			export DATA_PORT=$base MASTER_PORTS="$((base + 1)) $((base + 2)) $((base + 3))"
			export SERVICE_PORT=$((base + 4)) NGINX_PORT=$((base + 4 + INSTANCES))
			return 0
		fi
	done
	die "no block of $n free ports found in 30 tries"
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
	RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/seckill-$1.XXXXXX")"
	export RUN_DIR INSTANCES
	tb_pick_ports
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

# tb_exit: the EXIT trap. Calls tb_on_exit RC (defined by the script) after the teardown.
tb_exit() {
	local rc=$?
	set +e
	tb_teardown || rc=1
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
	if declare -F tb_on_exit >/dev/null; then tb_on_exit "$rc"; fi
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

# tb_reset STOCK: POST /inventory/reset through nginx (X-Admin-Token when ADMIN_TOKEN is set).
tb_reset() {
	local auth=() out
	[[ -z "${ADMIN_TOKEN:-}" ]] || auth=(-H "X-Admin-Token: $ADMIN_TOKEN")
	out="$(curl -s --max-time 10 -X POST "${auth[@]}" -w '\n%{http_code}' "$URL/inventory/reset?stock=$1")" || true
	[[ "${out##*$'\n'}" == 200 ]] || {
		warn "reset failed: ${out//$'\n'/ }"
		return 1
	}
}

# tb_audit: the audit, read until two reads 0.3 s apart agree (sales abandoned by a client may
# still be finishing on the server). Fails when nothing answers for 10 s.
tb_audit() {
	local prev="" inv="" i
	for ((i = 0; i < 33; i++)); do
		inv="$(curl -sf --max-time 3 "$URL/inventory" | jq -c 'del(.soldByInstance)' 2>/dev/null || true)"
		[[ -n "$inv" && "$inv" == "$prev" ]] && break
		prev="$inv"
		sleep 0.3
	done
	[[ -n "$inv" ]] || return 1
	curl -sf --max-time 3 "$URL/inventory"
}

tb_load_start() {
	local file="$1" query="$2" conc="$3" secs="$4" timeout="$5"
	TB_LOAD_T0=$(tb_now_us)
	hey -z "${secs}s" -c "$conc" -t "$timeout" -m POST -o csv "$URL/inventory/sale?$query" >"$file" 2>"$file.err" &
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

# tb_lt A B: A < B for decimal numbers.
tb_lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
