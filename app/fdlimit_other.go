//go:build !unix

package app

// fdLimit is unknown here: server.maxConns is used as configured.
func fdLimit() uint64 { return 0 }
