//go:build unix

package redisserver

import (
	"net"
	"strconv"
	"syscall"
)

// holdPort keeps addr's port from every other process while its server is stopped: a TCP socket
// bound to it, never listening, so a client's connection is refused as by a stopped server, and
// a server started by another test cannot take the port and answer in its place (a lock taken
// there would look taken on the stopped one). The socket sets no SO_REUSEADDR, so no bind
// succeeds beside it. It returns the function that frees the port (a no-op when it could not be
// held).
func holdPort(addr string) func() {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return func() {}
	}
	p, err := strconv.Atoi(port)
	ip := net.ParseIP(host).To4()
	if err != nil || ip == nil {
		return func() {}
	}
	// Close-on-exec, under the fork lock as package net does: a server started meanwhile by
	// this process must not inherit the socket, and with it the port.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return func() {}
	}
	sa := &syscall.SockaddrInet4{Port: p}
	copy(sa.Addr[:], ip)
	if err := syscall.Bind(fd, sa); err != nil {
		_ = syscall.Close(fd)
		return func() {}
	}
	return func() { _ = syscall.Close(fd) }
}
