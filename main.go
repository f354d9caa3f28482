// Command seckill is a flash-sale service that sells inventory001 under a swappable Redis lock,
// a laboratory for the Redis distributed-lock story.
//
//	@title			seckill
//	@version		1.0
//	@description	Sells one item of inventory001 at a time under a Redis distributed lock chosen per request,
//	@description	reproducing each naive lock's bug and each fix of the Redis-lock story.
//	@BasePath		/
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"seckill/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cli.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	var usage cli.UsageError
	var status cli.StatusError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		// The usage is printed already; exit 2 as command-line tools do for bad arguments.
		os.Exit(2)
	case errors.As(err, &status):
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(status.Code)
	default:
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(1)
	}
}
