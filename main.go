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
	"io"
	"os"
	"os/signal"
	"syscall"

	"seckill/app"
	"seckill/config"
	"seckill/lock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "seckill:", err)
		}
		os.Exit(1)
	}
}

// run parses the command line (`seckill [serve|lab|bench] [--config FILE] [lab or bench flags]`) and runs the command.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("seckill "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (default "+config.DefaultPath+" when present, else built-in defaults)")
	var labOpt labFlags
	if cmd == "lab" {
		labOpt.register(fs)
	}
	var benchOpt benchFlags
	if cmd == "bench" {
		benchOpt.register(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*cfgPath, getenv, lock.Names())
	if err != nil {
		return err
	}
	switch cmd {
	case "serve":
		return app.Serve(ctx, cfg, stdout, app.NewLogger(stderr, cfg.Log.Level))
	case "lab":
		return runLab(ctx, cfg, labOpt, stdout, stderr)
	case "bench":
		return runBench(ctx, benchOpt, stdout, stderr)
	default:
		return fmt.Errorf("unknown command %q (commands: serve, lab, bench)", cmd)
	}
}
