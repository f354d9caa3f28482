package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"seckill/config"
)

// checkPort makes sure serve can listen on server.host:server.port before it starts anything
// (in-process Redis servers, the stock): a busy port is named, with who holds it and the
// setting that moves it, instead of a bare "bind: address already in use" after the start.
func checkPort(cfg config.Config) error {
	addr := net.JoinHostPort(cfg.Server.Host, strconv.Itoa(cfg.Server.Port))
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln.Close()
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("serve: cannot listen on %s (server.host, server.port): %w", addr, err)
	}
	return fmt.Errorf("serve: port %d is already in use on %s by %s: stop it (another `go run .` also holds 6379 and "+
		"6381-6383 for its in-process Redis), or choose another port with SECKILL_SERVER_PORT=%d (server.port in --config FILE); "+
		"nothing was started: %w", cfg.Server.Port, cfg.Server.Host, portHolder(cfg.Server.Port), cfg.Server.Port+1, err)
}

// portHolder names the process listening on TCP port as "name (pid N)", from /proc (Linux): the
// listening socket's inode in /proc/net/tcp{,6}, then the process with that socket open. Where
// it cannot tell (another system, another user's process), it says so.
func portHolder(port int) string {
	const unknown = "a process this user cannot name (another user's?)"
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// sl local_address rem_address st ... inode (the 10th field); 0A is LISTEN.
			if len(fs) < 10 || fs[3] != "0A" {
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 32); ok && err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return unknown
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		target, err := os.Readlink(fd)
		if err != nil || !inodes[target] {
			continue
		}
		pid := strings.Split(fd, "/")[2]
		name, err := os.ReadFile("/proc/" + pid + "/comm")
		if err != nil {
			return "pid " + pid
		}
		return fmt.Sprintf("%s (pid %s)", strings.TrimSpace(string(name)), pid)
	}
	return unknown
}
