#!/usr/bin/env bash
# cluster.sh: the demo topology of docs/operations.md from installed binaries, without Docker.
#
#   scripts/cluster.sh up [PART...]      start what is not running yet (idempotent), wait until it answers
#   scripts/cluster.sh down [PART...]    stop what `up` started (by pid, verified), in reverse order
#   scripts/cluster.sh status [PART...]  list every part, its pid and whether it answers (exit 1 if one does not)
#   scripts/cluster.sh parts             list the part names of the topology
#
# Topology "standalone" (the default, TOPOLOGY=standalone):
#   redis-data      redis-server on DATA_PORT (6379): inventory001, orders, single-instance lock keys
#   redis-1..3      redis-server on MASTER_PORTS (6381 6382 6383): independent masters for multilock/redlock
#   seckill-1..N    the service, INSTANCES (3) of them on consecutive ports from SERVICE_PORT (9090)
#   nginx           round-robin in front of the instances on 127.0.0.1:NGINX_PORT (8000)
# Topology "sentinel" (TOPOLOGY=sentinel): the data Redis replicated and watched by Sentinel (row 12):
#   redis-data      the master on DATA_PORT (6379); redis-replica its replica on REPLICA_PORT (6380)
#   sentinel-1..3   redis-sentinel on SENTINEL_PORTS (26379 26380 26381), master name SENTINEL_MASTER (seckill),
#                   quorum 2, down-after SENTINEL_DOWN_AFTER ms (500), failover-timeout SENTINEL_FAILOVER_TIMEOUT ms (2000)
#   redis-1..3, seckill-1..N, nginx as above; the instances get SECKILL_REDIS_SENTINELMASTER/SENTINELADDRS
# Topology "cluster" (TOPOLOGY=cluster): the data store on a Redis Cluster, many SKUs:
#   redis-c1..c3    cluster-enabled redis-server on CLUSTER_PORTS (7001 7002 7003; each also uses port+10000
#                   for the cluster bus), joined by redis-cli --cluster create once all three answer
#   redis-1..3, seckill-1..N, nginx as above; the instances get SECKILL_REDIS_CLUSTERADDRS and
#                   SECKILL_INVENTORY_SKUS=SKUS (default inventory001..inventory016)
# Every process keeps its pid file, stamp and log in RUN_DIR (default ./run/cluster of the repository).
#
# Environment (defaults in brackets):
#   RUN_DIR [$ROOT/run/cluster]  TOPOLOGY [standalone]  DATA_PORT [6379]  MASTER_PORTS ["6381 6382 6383"]
#   INSTANCES [3]  SERVICE_PORT [9090]  NGINX_PORT [8000]  READY_TIMEOUT [30] seconds per part
#   LOCK_MODE [lua]  LOCK_WAIT, LOCK_LEASE (e.g. 5s, 30s; service defaults when empty)  LOG_LEVEL [info]
#   REPLICA_PORT [6380]  SENTINEL_PORTS ["26379 26380 26381"]  SENTINEL_MASTER [seckill]
#   SENTINEL_DOWN_AFTER [500]  SENTINEL_FAILOVER_TIMEOUT [2000]  CLUSTER_PORTS ["7001 7002 7003"]
#   SKUS (comma-separated SKUs for the instances; cluster default inventory001..inventory016)
#   CONFIG (a config file for the instances; built-in defaults when empty)
#   SECKILL_BIN (a prebuilt binary; else `go build` into RUN_DIR/seckill)
#   Any other SECKILL_* variable reaches the instances unchanged (see config/application.yaml).
# Requires: redis-server + redis-cli (apt: redis-server redis-tools), redis-sentinel for TOPOLOGY=sentinel
# (apt: redis-sentinel), nginx (apt: nginx), curl (apt: curl), go (or SECKILL_BIN).
#
# Adding a topology: write topology_NAME (fills PARTS, KIND, PORT and SVC_ENV, the addresses the instances get) and,
# for a new kind of part, start_KIND and ready_KIND. up/down/status work on any topology unchanged.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUN_DIR="${RUN_DIR:-$ROOT/run/cluster}"
TOPOLOGY="${TOPOLOGY:-standalone}"
DATA_PORT="${DATA_PORT:-6379}"
MASTER_PORTS="${MASTER_PORTS:-6381 6382 6383}"
INSTANCES="${INSTANCES:-3}"
SERVICE_PORT="${SERVICE_PORT:-9090}"
NGINX_PORT="${NGINX_PORT:-8000}"
READY_TIMEOUT="${READY_TIMEOUT:-30}"
LOCK_MODE="${LOCK_MODE:-lua}"
LOCK_WAIT="${LOCK_WAIT:-}"
LOCK_LEASE="${LOCK_LEASE:-}"
LOG_LEVEL="${LOG_LEVEL:-info}"
CONFIG="${CONFIG:-}"
SECKILL_BIN="${SECKILL_BIN:-}"
REPLICA_PORT="${REPLICA_PORT:-6380}"
SENTINEL_PORTS="${SENTINEL_PORTS:-26379 26380 26381}"
SENTINEL_MASTER="${SENTINEL_MASTER:-seckill}"
SENTINEL_DOWN_AFTER="${SENTINEL_DOWN_AFTER:-500}"
SENTINEL_FAILOVER_TIMEOUT="${SENTINEL_FAILOVER_TIMEOUT:-2000}"
CLUSTER_PORTS="${CLUSTER_PORTS:-7001 7002 7003}"
SKUS="${SKUS:-}"

need_whole DATA_PORT SERVICE_PORT NGINX_PORT INSTANCES READY_TIMEOUT REPLICA_PORT SENTINEL_DOWN_AFTER SENTINEL_FAILOVER_TIMEOUT
for p in $MASTER_PORTS; do [[ "$p" =~ ^[0-9]+$ ]] || die "MASTER_PORTS has a non-number: $p"; done
for p in $SENTINEL_PORTS $CLUSTER_PORTS; do [[ "$p" =~ ^[0-9]+$ ]] || die "SENTINEL_PORTS/CLUSTER_PORTS has a non-number: $p"; done
[[ "$SENTINEL_MASTER" =~ ^[A-Za-z0-9_.-]+$ ]] || die "SENTINEL_MASTER=$SENTINEL_MASTER: letters, digits, _ . - only"
[[ "$SKUS" =~ ^[A-Za-z0-9_.:,-]*$ ]] || die "SKUS=$SKUS: comma-separated names of letters, digits, _ . : - only"
((INSTANCES >= 1 && INSTANCES <= 32)) || die "INSTANCES=$INSTANCES is out of range 1..32"
[[ -z "$CONFIG" || -f "$CONFIG" ]] || die "CONFIG=$CONFIG does not exist"
[[ -z "$CONFIG" ]] || CONFIG="$(cd "$(dirname "$CONFIG")" && pwd)/$(basename "$CONFIG")"

# The topology: ordered part names (start order; down goes in reverse), and per part its kind,
# its port and extra arguments. SVC_ENV is what every service instance gets besides its port.
PARTS=()
declare -A KIND=() PORT=()
SVC_ENV=()

topology_standalone() {
	PARTS+=(redis-data)
	KIND[redis-data]=redis PORT[redis-data]=$DATA_PORT
	SVC_ENV=("SECKILL_REDIS_ADDR=127.0.0.1:$DATA_PORT")
	add_masters
	add_front
}

# add_parts PREFIX KIND PORTS: parts PREFIX1..N of KIND, one per port of the list PORTS; sets
# ADDRS (their addresses, comma-separated) and ADDR_COUNT.
add_parts() {
	local p i=1 addrs=()
	for p in $3; do
		PARTS+=("$1$i")
		KIND[$1$i]=$2 PORT[$1$i]=$p
		addrs+=("127.0.0.1:$p")
		i=$((i + 1))
	done
	ADDRS="$(IFS=,; printf '%s' "${addrs[*]}")"
	ADDR_COUNT=${#addrs[@]}
}

# add_masters: the independent lock masters redis-1..N (multilock, redlock) and their env.
add_masters() {
	add_parts redis- redis "$MASTER_PORTS"
	SVC_ENV+=("SECKILL_REDIS_MASTERS=$ADDRS")
}

# add_front: the instances and nginx (and the SKUs the instances sell, when SKUS is set).
add_front() {
	local i
	for ((i = 1; i <= INSTANCES; i++)); do
		PARTS+=("seckill-$i")
		KIND[seckill-$i]=seckill PORT[seckill-$i]=$((SERVICE_PORT + i - 1))
	done
	PARTS+=(nginx)
	KIND[nginx]=nginx PORT[nginx]=$NGINX_PORT
	[[ -z "$SKUS" ]] || SVC_ENV+=("SECKILL_INVENTORY_SKUS=$SKUS")
}

topology_sentinel() {
	PARTS+=(redis-data redis-replica)
	KIND[redis-data]=redis PORT[redis-data]=$DATA_PORT
	KIND[redis-replica]=replica PORT[redis-replica]=$REPLICA_PORT
	add_parts sentinel- sentinel "$SENTINEL_PORTS"
	((ADDR_COUNT >= 1)) || die "SENTINEL_PORTS is empty"
	SVC_ENV=("SECKILL_REDIS_SENTINELMASTER=$SENTINEL_MASTER" "SECKILL_REDIS_SENTINELADDRS=$ADDRS")
	add_masters
	add_front
}

topology_cluster() {
	add_parts redis-c cnode "$CLUSTER_PORTS"
	((ADDR_COUNT >= 3)) || die "CLUSTER_PORTS needs at least 3 ports (a Redis Cluster has at least 3 masters)"
	if [[ -z "$SKUS" ]]; then
		SKUS="$(printf 'inventory%03d,' $(seq 1 16))"
		SKUS="${SKUS%,}"
	fi
	SVC_ENV=("SECKILL_REDIS_CLUSTERADDRS=$ADDRS")
	add_masters
	add_front
}

declare -F "topology_$TOPOLOGY" >/dev/null || die "unknown TOPOLOGY=$TOPOLOGY (known: standalone, sentinel, cluster)"
"topology_$TOPOLOGY"

# settings is what makes two `up`s the same cluster; it is recorded in RUN_DIR/cluster.env.
settings() {
	local p
	printf 'TOPOLOGY=%s\n' "$TOPOLOGY"
	for p in "${PARTS[@]}"; do printf 'PART=%s %s %s\n' "$p" "${KIND[$p]}" "${PORT[$p]}"; done
	printf 'LOCK_MODE=%s\nLOCK_WAIT=%s\nLOCK_LEASE=%s\nLOG_LEVEL=%s\nCONFIG=%s\n' \
		"$LOCK_MODE" "$LOCK_WAIT" "$LOCK_LEASE" "$LOG_LEVEL" "$CONFIG"
}

# ---- redis -----------------------------------------------------------------------------------
# Every redis-server part is started by lib.sh's redis_start: no persistence, so each master
# starts empty, as the lab's scenarios expect. Whatever holds the stock and the orders keeps an
# append-only file in its part's directory (fsynced every second), so they survive its restart
# (what an acknowledged sale survives: docs/operations.md): the data Redis, its replica in the
# Sentinel topology (the data Redis after a failover) and the Cluster's nodes.
persist=(--appendonly yes --appendfsync everysec)
start_redis() {
	if [[ "$1" == redis-data ]]; then
		redis_start "$RUN_DIR" "$1" "${PORT[$1]}" "${persist[@]}"
	else
		redis_start "$RUN_DIR" "$1" "${PORT[$1]}"
	fi
}
ready_redis() { redis_ping "${PORT[$1]}"; }

# ---- replica (sentinel topology) ---------------------------------------------------------------
# Diskless sync without its 5 s default delay: whichever is master after a failover syncs its
# new replica at once.
start_replica() {
	redis_start "$RUN_DIR" "$1" "${PORT[$1]}" --repl-diskless-sync-delay 0 --replicaof 127.0.0.1 "${PORT[redis-data]}" "${persist[@]}"
}
# Ready once its first sync is done (a replica still syncing answers PING already).
ready_replica() {
	redis-cli -h 127.0.0.1 -p "${PORT[$1]}" info replication 2>/dev/null | grep -q '^master_link_status:up'
}

# ---- sentinel --------------------------------------------------------------------------------
# sentinel_id PORT: a fixed 40-hex Sentinel id per port, so every sentinel's configuration can
# name the others (known-sentinel) and a quorum exists at once, without a discovery round.
sentinel_id() { printf 'seckill-sentinel-%s' "$1" | sha1sum | cut -c1-40; }

sentinel_conf() {
	local name="$1" port="${PORT[$1]}" p n
	n="$(wc -w <<<"$SENTINEL_PORTS")"
	printf '# Generated by scripts/cluster.sh; Sentinel rewrites this file as its view changes.\n'
	printf 'port %s\nbind 127.0.0.1\ndaemonize no\nprotected-mode no\ndir %s\nlogfile ""\n' "$port" "$RUN_DIR/$name"
	printf 'sentinel myid %s\n' "$(sentinel_id "$port")"
	printf 'sentinel monitor %s 127.0.0.1 %s %s\n' "$SENTINEL_MASTER" "${PORT[redis-data]}" $((n / 2 + 1))
	printf 'sentinel down-after-milliseconds %s %s\n' "$SENTINEL_MASTER" "$SENTINEL_DOWN_AFTER"
	printf 'sentinel failover-timeout %s %s\n' "$SENTINEL_MASTER" "$SENTINEL_FAILOVER_TIMEOUT"
	printf 'sentinel parallel-syncs %s 1\n' "$SENTINEL_MASTER"
	printf 'sentinel known-replica %s 127.0.0.1 %s\n' "$SENTINEL_MASTER" "${PORT[redis-replica]}"
	for p in $SENTINEL_PORTS; do
		[[ "$p" == "$port" ]] || printf 'sentinel known-sentinel %s 127.0.0.1 %s %s\n' "$SENTINEL_MASTER" "$p" "$(sentinel_id "$p")"
	done
}

start_sentinel() {
	local name="$1" p other="" conf="$RUN_DIR/$1/sentinel.conf"
	mkdir -p "$RUN_DIR/$name"
	# A sentinel restarted while the others run keeps the file it rewrote (it knows about a
	# failover that happened meanwhile); a fresh topology starts from a fresh file.
	for p in "${PARTS[@]}"; do
		if [[ "${KIND[$p]}" == sentinel && "$p" != "$name" ]] && proc_pid "$RUN_DIR" "$p" >/dev/null; then other=1; fi
	done
	if [[ -z "$other" || ! -s "$conf" ]]; then sentinel_conf "$name" >"$conf"; fi
	proc_start "$RUN_DIR" "$name" "$RUN_DIR/$name" redis-sentinel "$conf"
}
# Ready when it answers and names a master (the quorum needs the others, which start after it).
ready_sentinel() {
	[[ -n "$(redis-cli -h 127.0.0.1 -p "${PORT[$1]}" sentinel get-master-addr-by-name "$SENTINEL_MASTER" 2>/dev/null)" ]]
}

# ---- cnode (cluster topology) ----------------------------------------------------------------
# nodes.conf lives in the part's directory, beside its append-only file: a node restarted alone
# rejoins the cluster with its keys.
start_cnode() {
	redis_start "$RUN_DIR" "$1" "${PORT[$1]}" --cluster-enabled yes --cluster-config-file nodes.conf \
		--cluster-node-timeout 2000 "${persist[@]}"
}

cluster_nodes() {
	local p
	for p in "${PARTS[@]}"; do
		if [[ "${KIND[$p]}" == cnode ]]; then printf '127.0.0.1:%s\n' "${PORT[$p]}"; fi
	done
}

cluster_info() { redis-cli -h 127.0.0.1 -p "$1" cluster info 2>/dev/null | tr -d '\r'; }

# ready_cnode NAME: the node answers; the last node of the topology is ready only when the
# cluster is: during `up` it creates the cluster (once every node answers and none has a slot
# yet), then waits for cluster_state:ok on every node.
ready_cnode() {
	local port="${PORT[$1]}" last n addr info nodes=()
	redis_ping "$port" || return 1
	mapfile -t nodes < <(cluster_nodes)
	last="${nodes[${#nodes[@]} - 1]}"
	[[ "$last" == "127.0.0.1:$port" ]] || return 0
	for addr in "${nodes[@]}"; do
		redis_ping "${addr##*:}" || return 1
	done
	if [[ "${cmd:-}" == up ]]; then
		n=0
		for addr in "${nodes[@]}"; do
			info="$(cluster_info "${addr##*:}")"
			if [[ "$info" == *"cluster_slots_assigned:0"* ]]; then n=$((n + 1)); fi
		done
		if ((n == ${#nodes[@]})); then
			log "creating the Redis Cluster: redis-cli --cluster create ${nodes[*]}"
			redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >>"$RUN_DIR/cluster-create.log" 2>&1 || {
				warn "redis-cli --cluster create failed; see $RUN_DIR/cluster-create.log"
				return 1
			}
		fi
	fi
	for addr in "${nodes[@]}"; do
		info="$(cluster_info "${addr##*:}")"
		[[ "$info" == *"cluster_state:ok"* && "$info" == *"cluster_known_nodes:${#nodes[@]}"* ]] || return 1
	done
}

# ---- seckill ---------------------------------------------------------------------------------
# The binary: lib.sh's build_seckill (a copy of SECKILL_BIN, or go build) into RUN_DIR.
start_seckill() {
	local name="$1" port="${PORT[$1]}" args=(serve)
	[[ -z "$CONFIG" ]] || args+=(--config "$CONFIG")
	local envs=("${SVC_ENV[@]}" "SECKILL_SERVER_PORT=$port" "SECKILL_SERVER_INSTANCE=$name"
		"SECKILL_SERVER_HOST=127.0.0.1" "SECKILL_REDIS_EMBEDDED=never" "SECKILL_LOCK_MODE=$LOCK_MODE" "SECKILL_LOG_LEVEL=$LOG_LEVEL")
	[[ -z "$LOCK_WAIT" ]] || envs+=("SECKILL_LOCK_WAIT=$LOCK_WAIT")
	[[ -z "$LOCK_LEASE" ]] || envs+=("SECKILL_LOCK_LEASE=$LOCK_LEASE")
	# Its working directory has no config/application.yaml, so the built-in defaults apply
	# unless CONFIG names a file.
	proc_start "$RUN_DIR" "$name" "$RUN_DIR/$name" env "${envs[@]}" "$RUN_DIR/seckill" "${args[@]}"
}
ready_seckill() { http_ok "http://127.0.0.1:${PORT[$1]}/readyz"; }

# ---- nginx -----------------------------------------------------------------------------------
nginx_conf() {
	local dir="$RUN_DIR/nginx" p user=""
	# A master started by root hands the workers to "nobody" unless told otherwise; keep the
	# current user so the workers can use the temp dirs below.
	if [[ "$(id -u)" == 0 ]]; then user="user $(id -un) $(id -gn);"; fi
	cat <<EOF
# Generated by scripts/cluster.sh for RUN_DIR=$RUN_DIR; regenerated on every up.
$user
worker_processes auto;
daemon off;
pid $dir/logs/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
    log_format upstream '\$remote_addr [\$time_local] "\$request" \$status \$body_bytes_sent '
                        'upstream=\$upstream_addr rt=\$request_time urt=\$upstream_response_time';
    access_log $dir/logs/access.log upstream buffer=64k flush=1s;
    client_body_temp_path $dir/temp/client_body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;

    # Round robin over the instances (nginx's default balancing).
    upstream seckill {
EOF
	for p in "${PARTS[@]}"; do
		[[ "${KIND[$p]}" == seckill ]] || continue
		printf '        server 127.0.0.1:%s;\n' "${PORT[$p]}"
	done
	cat <<EOF
        keepalive 64;
        # Shorter than the service's server.idleTimeout (30 s): nginx must drop an idle connection
        # before the service closes it, or a sale sent on it as the service closes it is reset,
        # and nginx, which does not resend a POST, answers 502.
        keepalive_timeout 20s;
    }
    server {
        listen 127.0.0.1:${PORT[nginx]};
        location = /nginx-health { access_log off; default_type text/plain; return 200 "ok\n"; }
        location / {
            proxy_pass http://seckill;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Real-IP \$remote_addr;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            # A sale is not idempotent: nginx retries on the next instance only when the request
            # could not be sent (a POST is never replayed once sent).
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 2;
            proxy_connect_timeout 2s;
            # Long enough for the lab's bounded faults (business time, freezes) plus the lock wait.
            proxy_read_timeout 150s;
            add_header X-Upstream \$upstream_addr always;
        }
    }
}
EOF
}

start_nginx() {
	local dir="$RUN_DIR/nginx"
	mkdir -p "$dir/conf" "$dir/logs" "$dir/temp"
	nginx_conf >"$dir/conf/nginx.conf"
	# -e: the error log before the config is read (else nginx tries /var/log/nginx/error.log).
	nginx -t -q -p "$dir/" -e "$dir/logs/error.log" -c "$dir/conf/nginx.conf" >>"$RUN_DIR/nginx.log" 2>&1 ||
		{
			tail -n 20 "$RUN_DIR/nginx.log" >&2
			die "nginx rejected $dir/conf/nginx.conf"
		}
	proc_start "$RUN_DIR" nginx "$dir" nginx -p "$dir/" -e "$dir/logs/error.log" -c "$dir/conf/nginx.conf"
}
ready_nginx() {
	http_ok "http://127.0.0.1:${PORT[nginx]}/nginx-health" && http_ok "http://127.0.0.1:${PORT[nginx]}/readyz"
}

# ---- commands --------------------------------------------------------------------------------
# select_parts NAME...: the parts named (all when none), in topology order; unknown names fail.
select_parts() {
	local want=("$@") p w found
	SELECTED=()
	if ((${#want[@]} == 0)); then
		SELECTED=("${PARTS[@]}")
		return
	fi
	for w in "${want[@]}"; do
		found=""
		for p in "${PARTS[@]}"; do
			if [[ "$p" == "$w" ]]; then found=1; fi
		done
		[[ -n "$found" ]] || die "unknown part $w (parts: ${PARTS[*]})"
	done
	for p in "${PARTS[@]}"; do
		for w in "${want[@]}"; do
			if [[ "$p" == "$w" ]]; then SELECTED+=("$p"); fi
		done
	done
}

any_running() {
	local f
	for f in "$RUN_DIR"/*.pid; do
		[[ -e "$f" ]] || continue
		proc_pid "$RUN_DIR" "$(basename "$f" .pid)" >/dev/null && return 0
	done
	return 1
}

check_binaries() {
	local p k
	for p in "${SELECTED[@]}"; do
		k="${KIND[$p]}"
		case "$k" in
		redis | replica | cnode)
			need_cmd redis-server redis-server
			need_cmd redis-cli redis-tools
			;;
		sentinel)
			need_cmd redis-sentinel redis-sentinel
			need_cmd redis-cli redis-tools
			need_cmd sha1sum coreutils
			;;
		nginx) need_cmd nginx nginx ;;
		esac
	done
	need_cmd curl curl
	need_cmd setsid util-linux
}

cmd_up() {
	select_parts "$@"
	check_binaries
	mkdir -p "$RUN_DIR"
	if [[ -f "$RUN_DIR/cluster.env" ]] && any_running; then
		if ! diff -q <(settings) "$RUN_DIR/cluster.env" >/dev/null; then
			diff <(settings) "$RUN_DIR/cluster.env" | sed 's/^/  /' >&2 || true
			die "a cluster with other settings (< asked, > running) runs in $RUN_DIR: run '$0 down' first, or use another RUN_DIR"
		fi
	fi
	settings >"$RUN_DIR/cluster.env"

	local p pid started=() need_build=""
	# Every port first: a busy one is named before a build of a minute or more, not after it.
	for p in "${SELECTED[@]}"; do
		if ! proc_pid "$RUN_DIR" "$p" >/dev/null && port_in_use "${PORT[$p]}"; then
			die "$p: port ${PORT[$p]} is already in use by $(port_holder "${PORT[$p]}") (a running \`go run .\` holds 6379 and 6381-6383 for its in-process Redis): stop it, or choose other ports (DATA_PORT, MASTER_PORTS, SERVICE_PORT, NGINX_PORT); nothing was built or started"
		fi
	done
	for p in "${SELECTED[@]}"; do
		if [[ "${KIND[$p]}" == seckill ]] && ! proc_pid "$RUN_DIR" "$p" >/dev/null; then need_build=1; fi
	done
	# Build only when no instance runs the current binary (a running one keeps it).
	if [[ -n "$need_build" ]]; then
		local running=""
		for p in "${PARTS[@]}"; do
			if [[ "${KIND[$p]}" == seckill ]] && proc_pid "$RUN_DIR" "$p" >/dev/null; then running=1; fi
		done
		if [[ -z "$running" || ! -x "$RUN_DIR/seckill" ]]; then build_seckill "$RUN_DIR"; fi
	fi

	for p in "${SELECTED[@]}"; do
		if pid="$(proc_pid "$RUN_DIR" "$p")"; then
			log "$p: already running (pid $pid)"
			continue
		fi
		rm -f "$RUN_DIR/$p.pid" "$RUN_DIR/$p.stamp"
		if port_in_use "${PORT[$p]}"; then
			die "$p: port ${PORT[$p]} is already in use by $(port_holder "${PORT[$p]}") (a running \`go run .\` holds 6379 and 6381-6383 for its in-process Redis): stop it, or choose other ports (DATA_PORT, MASTER_PORTS, SERVICE_PORT, NGINX_PORT)"
		fi
		"start_${KIND[$p]}" "$p" || die "$p did not start; see $RUN_DIR/$p.log"
		log "$p: started (pid $(cat "$RUN_DIR/$p.pid"), port ${PORT[$p]}, log $RUN_DIR/$p.log)"
		started+=("$p")
		# Each part waits for the ones before it: instances need Redis (embedded=never fails fast),
		# nginx needs instances to answer its readiness probe.
		wait_for "$READY_TIMEOUT" "$p" "ready_${KIND[$p]}" "$p" || {
			tail -n 20 "$RUN_DIR/$p.log" >&2 || true
			die "$p is not ready after ${READY_TIMEOUT}s; see $RUN_DIR/$p.log"
		}
	done
	log "up: ${#started[@]} started, $((${#SELECTED[@]} - ${#started[@]})) already running; run dir $RUN_DIR"
	if [[ " ${SELECTED[*]} " == *" nginx "* ]]; then
		log "sales through nginx: curl -X POST 'http://127.0.0.1:${PORT[nginx]}/inventory/sale?lock=$LOCK_MODE'"
	fi
}

cmd_down() {
	local f name order=()
	if (($# > 0)); then
		select_parts "$@"
		order=("${SELECTED[@]}")
	else
		# Everything up started: the recorded parts, plus any pid file in RUN_DIR (a part of an
		# earlier topology), so down never leaves one of ours behind.
		if [[ -f "$RUN_DIR/cluster.env" ]]; then
			while read -r name _; do order+=("$name"); done < <(sed -n 's/^PART=//p' "$RUN_DIR/cluster.env")
		fi
		for f in "$RUN_DIR"/*.pid; do
			[[ -e "$f" ]] || continue
			name="$(basename "$f" .pid)"
			[[ " ${order[*]} " == *" $name "* ]] || order+=("$name")
		done
	fi
	proc_stop_all "$RUN_DIR" 10 "${order[@]}" || die "some parts could not be stopped"
	if (($# > 0)); then log "down: $* not running any more"; else log "down: nothing of $RUN_DIR runs any more"; fi
}

cmd_status() {
	select_parts "$@"
	local p pid state rc=0
	printf '%-12s %-8s %-7s %-8s %s\n' PART KIND PORT PID STATE
	for p in "${SELECTED[@]}"; do
		if pid="$(proc_pid "$RUN_DIR" "$p")"; then
			if "ready_${KIND[$p]}" "$p" >/dev/null 2>&1; then state=answers; else
				state="running, not answering"
				rc=1
			fi
		else
			pid=-
			if port_in_use "${PORT[$p]}"; then state="stopped (port used by another program)"; else state=stopped; fi
			rc=1
		fi
		printf '%-12s %-8s %-7s %-8s %s\n' "$p" "${KIND[$p]}" "${PORT[$p]}" "$pid" "$state"
	done
	return "$rc"
}

# status and down describe the cluster as it was started: read the recorded settings back.
load_recorded() {
	[[ -f "$RUN_DIR/cluster.env" ]] || return 0
	local k v name kind port
	PARTS=()
	KIND=() PORT=()
	while IFS='=' read -r k v; do
		case "$k" in
		PART)
			read -r name kind port <<<"$v"
			PARTS+=("$name")
			KIND[$name]=$kind PORT[$name]=$port
			;;
		TOPOLOGY) TOPOLOGY=$v ;;
		esac
	done <"$RUN_DIR/cluster.env"
}

cmd="${1:-}"
[[ -n "$cmd" ]] && shift
case "$cmd" in
up) cmd_up "$@" ;;
down)
	load_recorded
	cmd_down "$@"
	;;
status)
	load_recorded
	cmd_status "$@"
	;;
parts) printf '%s\n' "${PARTS[@]}" ;;
*)
	usage >&2
	exit 2
	;;
esac
