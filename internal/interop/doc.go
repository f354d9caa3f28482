// Package interop holds the tests that the library's Redisson-compatible locks keep their
// promises towards other clients of the same Redis: sharded pub/sub on a Redis Cluster, a fair
// queue shared with a client that follows RFairLock's protocol, and what stays in Redis after
// every holder and waiter crashed. See docs/interop.md.
package interop
