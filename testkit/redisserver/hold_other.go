//go:build !unix

package redisserver

// holdPort does nothing where a port cannot be held without listening.
func holdPort(string) func() { return func() {} }
