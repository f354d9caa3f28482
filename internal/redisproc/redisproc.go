// Package redisproc starts and stops Redis servers for tests, the lab and the bench: one server is
// the lock library's test server (locktest: a real redis-server process on a free loopback port
// when the binary is installed, else an in-process miniredis), and this package adds what only the
// service needs: Sentinel and Cluster topologies, and SECKILL_TEST_REDIS=embedded to force the
// in-process server. Only processes it started are ever stopped, by PID.
package redisproc

import (
	"os"

	"github.com/seckill-lab/seckill/testkit/redisserver"
)

// Kinds of server.
const (
	KindReal     = redisserver.KindReal
	KindEmbedded = redisserver.KindEmbedded
)

// Server is one Redis server on 127.0.0.1.
type Server = redisserver.Server

// Options choose how to start a server.
type Options = redisserver.Options

// UseReal reports whether Start would run a real redis-server: installed, and not forced off by
// SECKILL_TEST_REDIS=embedded.
func UseReal() bool { return redisserver.UseReal() && os.Getenv("SECKILL_TEST_REDIS") != "embedded" }

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) { return redisserver.FreePort() }

// Start starts one server.
func Start(opt Options) (*Server, error) {
	if !UseReal() {
		opt.Embedded = true
	}
	return redisserver.Start(opt)
}

// waitPing waits until the process pid answers on addr.
var waitPing = redisserver.WaitPing
