// Package cli is seckill's command line: the commands (serve, lab, bench, explore, simulate,
// load), their flags and their help. main calls Run and turns its error into an exit status.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"seckill/app"
	"seckill/config"
	"seckill/internal/modes"
	"seckill/lab/labapp"
)

// commands are the subcommands, in the order usage lists them.
var commands = []struct{ name, about string }{
	{"serve", "run the service (the default when no command is given)"},
	{"lab", "run the scenario lab: every lock mode's experiment, with a verdict per row"},
	{"bench", "benchmark the safe lock modes and reference libraries on Redis servers it starts"},
	{"explore", "find each lock mode's failure with random faults, shrink it and replay it"},
	{"simulate", "run the locks' scripts on a virtual clock, every interleaving of a few clients checked"},
	{"load", "fire sales at a running service, record the answers and check them for linearizability"},
	{"help", "print this help, or a command's flags (seckill help lab)"},
}

// UsageError is a bad command line: the usage has been printed, and the process exits 2.
type UsageError struct{ err error }

func (e UsageError) Error() string { return e.err.Error() }
func (e UsageError) Unwrap() error { return e.err }

// StatusError is a result that asks for an exit status of its own (Code), such as `seckill lab`'s
// 3 when some rows were STARVED and none UNEXPECTED.
type StatusError struct {
	Code int
	Err  error
}

func (e StatusError) Error() string { return e.Err.Error() }
func (e StatusError) Unwrap() error { return e.Err }

// Run parses the command line and runs the command:
//
//	seckill [--config FILE] [serve|lab|bench|explore|simulate|load|help] [--config FILE] [command flags]
//
// --config may stand before or after the command. An unknown command, flag or stray argument
// prints the usage to stderr and is a UsageError.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, opts, cfgPath, err := parseCommand(args, stdout, stderr)
	if err != nil || cmd == "help" {
		return err
	}
	cfg, err := config.Load(cfgPath, getenv, modes.Names())
	if err != nil {
		return err
	}
	switch cmd {
	case "lab":
		return runLab(ctx, cfg, opts.lab, stdout, stderr)
	case "bench":
		return runBench(ctx, opts.bench, getenv, stdout, stderr)
	case "load":
		return runLoad(ctx, opts.load, stdout)
	case "explore":
		return runExplore(ctx, opts.explore, stdout, stderr)
	case "simulate":
		return runSimulate(ctx, opts.simulate, stdout)
	default:
		if err := checkPort(cfg); err != nil {
			return err
		}
		return app.Serve(ctx, cfg, stdout, app.NewLogger(stderr, cfg.Log.Level), labapp.Lab{})
	}
}

// Parse reads args as Run would, printing what Run prints of a bad command line, and runs
// nothing: the policy tests check the documentation's commands with it.
func Parse(args []string, stdout, stderr io.Writer) error {
	_, _, _, err := parseCommand(args, stdout, stderr)
	return err
}

// parseCommand reads the command line: the command ("help" once its text is printed), its
// options and the configuration file's path. The README's commands are checked against it.
func parseCommand(args []string, stdout, stderr io.Writer) (string, *cmdOptions, string, error) {
	global := newFlagSet("seckill", stderr)
	cfgPath := global.String("config", "", configUsage)
	global.Usage = func() { printUsage(stderr) }
	if err := global.Parse(args); err != nil {
		return "", nil, "", flagErr(err)
	}
	cmd, rest := "serve", global.Args()
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	if cmd == "help" {
		return cmd, nil, "", help(stdout, stderr, rest)
	}
	fs, opts, err := commandFlags(cmd, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "seckill: %v\n", err)
		printUsage(stderr)
		return "", nil, "", UsageError{err}
	}
	fs.StringVar(cfgPath, "config", *cfgPath, configUsage)
	if err := fs.Parse(rest); err != nil {
		return "", nil, "", flagErr(err)
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintf(stderr, "seckill %s: %v\n", cmd, err)
		fs.Usage()
		return "", nil, "", UsageError{err}
	}
	return cmd, opts, *cfgPath, nil
}

const configUsage = "configuration file (default " + config.DefaultPath + " when present, else built-in defaults)"

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// cmdOptions are the flags of every command; commandFlags fills the one it parses for.
type cmdOptions struct {
	lab      labFlags
	bench    benchFlags
	load     loadFlags
	explore  exploreFlags
	simulate simulateFlags
}

// commandFlags builds the flag set of cmd (its --config is added by the caller).
func commandFlags(cmd string, stderr io.Writer) (*flag.FlagSet, *cmdOptions, error) {
	fs := newFlagSet("seckill "+cmd, stderr)
	opts := new(cmdOptions)
	switch cmd {
	case "serve":
	case "lab":
		opts.lab.register(fs)
	case "bench":
		opts.bench.register(fs)
	case "load":
		opts.load.register(fs)
	case "explore":
		opts.explore.register(fs)
	case "simulate":
		opts.simulate.register(fs)
	default:
		return nil, nil, fmt.Errorf("unknown command %q", cmd)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: seckill [--config FILE] %s [flags]\n\nflags of %s:\n", cmd, cmd)
		printDefaults(fs)
	}
	return fs, opts, nil
}

// flagErr turns a parse error into a UsageError (the flag package has printed the problem and
// the usage); -h and --help stay flag.ErrHelp, a request rather than a mistake.
func flagErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return UsageError{err}
}

// help prints the usage to stdout, or one command's flags.
func help(stdout, stderr io.Writer, args []string) error {
	if len(args) == 0 {
		printUsage(stdout)
		return nil
	}
	if len(args) > 1 || args[0] == "help" {
		err := fmt.Errorf("help takes one command name, got %q", strings.Join(args, " "))
		fmt.Fprintf(stderr, "seckill: %v\n", err)
		printUsage(stderr)
		return UsageError{err}
	}
	fs, _, err := commandFlags(args[0], stdout)
	if err != nil {
		fmt.Fprintf(stderr, "seckill: %v\n", err)
		printUsage(stderr)
		return UsageError{err}
	}
	fs.String("config", "", configUsage)
	fs.Usage()
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: seckill [--config FILE] [command] [flags]\n\ncommands:\n")
	width := 0 // the longest name: every description starts in one column
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.about)
	}
	fmt.Fprintf(w, "\nglobal flags (before or after the command):\n")
	global := newFlagSet("seckill", w)
	global.String("config", "", configUsage)
	printDefaults(global)
	fmt.Fprintf(w, "\n'seckill help COMMAND' lists a command's flags.\n")
}

// helpWidth is the widest line the help prints.
const helpWidth = 100

// printDefaults is fs.PrintDefaults with each flag's text wrapped to helpWidth columns: the
// flag package prints it on one line however long (a list of defaults can run to 180).
func printDefaults(fs *flag.FlagSet) {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	const indent = "      "
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		text, ok := strings.CutPrefix(line, "    \t")
		if !ok {
			fmt.Fprintln(out, line)
			continue
		}
		cur := indent
		for _, word := range strings.Fields(text) {
			// A list too long for a line (the default strategies) breaks after its commas.
			for i, part := range strings.SplitAfter(word, ",") {
				sep := " "
				if i > 0 {
					sep = ""
				}
				if cur != indent && len(cur)+len(sep)+len(part) > helpWidth {
					fmt.Fprintln(out, cur)
					cur, sep = indent, ""
				}
				if cur == indent {
					sep = ""
				}
				cur += sep + part
			}
		}
		fmt.Fprintln(out, cur)
	}
}
