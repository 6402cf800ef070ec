// Command feedmail turns web feeds into email. It owns the process edge:
// FEEDMAIL_* environment variables and flags into configuration (see the
// README), wiring the parts together (roles, mounts, the store), and the
// subcommands `feedmail help` lists, whose machine-readable output is JSON
// on stdout (logs go to stderr). It holds no business logic: a subcommand
// checks its flags and calls the package that owns the rule (subscribe,
// store, billing, poller, digest).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := runIO(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand; multi-word commands ("feed status") are keyed by
// their words joined with a space.
type command struct {
	usage   string // arguments after the name
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

// failStatus is the exit status of a runtime failure (not a usage error)
// of command name, 0 meaning the usual 1: `inbound` exits 75 (EX_TEMPFAIL)
// so that the MTA piping mail to it tries again instead of bouncing the
// bounce. A usage error is 2 for every command: trying again cannot fix it.
func failStatus(name string) int {
	if name == "inbound" {
		return exTempFail
	}
	return 0
}

// commands lists every subcommand. Each lives in its own cmd_*.go file.
func commands() map[string]command {
	return map[string]command{
		"serve":   {"", "migrate, then run the roles in FEEDMAIL_ROLES until SIGINT/SIGTERM", cmdServe},
		"migrate": {"", "apply database migrations and exit", cmdMigrate},
		"credits": {creditsUsage, "credit ledger: balance, grant (creates the account, releases held mail), ledger", cmdCredits},
		"digest":  {digestUsage, "digests: set (creates the account; prints the next slot), list", cmdDigest},
		"pause":   {pauseUsage, "pause one subscription or the whole account: nothing mailed or charged until --until or resume", cmdPause},
		"resume":  {resumeUsage, "end a pause (see pause)", cmdResume},
		"account": {accountUsage, "a person's account: status (bounces, latest reports), export (JSON: subscriptions with their consent, digests, ledger, purchases, mail reports), delete", cmdAccount},
		// OPML in and out (cmd_opml.go)
		"import-opml":  {importOPMLUsage, "subscribe a person (created if missing) to every feed of an OPML file; JSON report", cmdImportOPML},
		"export-opml":  {exportOPMLUsage, "print a person's subscriptions as OPML", cmdExportOPML},
		"inbound":      {inboundUsage, "read one message that came back (bounce, complaint, unsubscribe) on standard input; JSON line", cmdInbound},
		"subscribe":    {subscribeUsage, "add a subscription (confirmation email unless --confirmed); creates the account", cmdSubscribe},
		"subscription": {subscriptionUsage, "set a subscription's filters (--include, --exclude) and format", cmdSubscription},
		"poll":         {pollUsage, "poll one feed now (added if new, followed or not); JSON report", cmdPoll},
		"feed status":  {feedStatusUsage, "JSON: why a feed is polled when it is (state, next poll, reason, validators, errors, recent polls)", cmdFeedStatus},
		"feed host":    {feedHostUsage, "show or set a host's minimum poll interval and back-off (JSON)", cmdFeedHost},
		"mail health":  {mailHealthUsage, "JSON per destination domain: sent, hard and soft bounces, sender-side refusals (blocked, authentication, policy, rate), complaints and their rate, pauses, and what to fix", cmdMailHealth},
		// more commands register here
	}
}

// errUsage marks errors that should be followed by a pointer to help.
var errUsage = errors.New("usage")

// run is runIO with nothing on standard input.
func run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) int {
	return runIO(ctx, args, environ, strings.NewReader(""), stdout, stderr)
}

// runIO runs the command line args with environ ("NAME=value" entries) as
// the environment and returns the exit status.
func runIO(ctx context.Context, args []string, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(stdout, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	name, rest := args[0], args[1:]
	cmd, ok := cmds[name]
	if !ok && len(rest) > 0 {
		if c, ok2 := cmds[name+" "+rest[0]]; ok2 {
			cmd, ok, name, rest = c, true, name+" "+rest[0], rest[1:]
		}
	}
	if !ok {
		if verbs := groupVerbs(cmds, args[0]); verbs != "" {
			fmt.Fprintf(stderr, "feedmail %s: which one? %s (run `feedmail help`)\n", args[0], verbs)
			return 2
		}
		fmt.Fprintf(stderr, "feedmail: unknown command %q (run `feedmail help`)\n", strings.Join(args[:min(2, len(args))], " "))
		return 2
	}
	fail := func(usual int) int {
		if st := failStatus(name); st != 0 {
			return st
		}
		return usual
	}
	a, err := newApp(environ, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "feedmail: %v\n", err)
		return fail(1)
	}
	defer a.close()
	a.stdin = stdin
	a.helpAsked = slices.ContainsFunc(rest, func(s string) bool { return s == "-h" || s == "-help" || s == "--help" || s == "--h" })
	if err := cmd.run(ctx, a, rest); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "feedmail %s: %v\nusage: feedmail %s %s\n", name, err, name, cmd.usage)
			return 2
		default:
			fmt.Fprintf(stderr, "feedmail %s: %v\n", name, err)
			return fail(1)
		}
	}
	return 0
}

// groupVerbs lists the second words of the commands that start with
// group ("status or host" for "feed"), "" when there are none.
func groupVerbs(cmds map[string]command, group string) string {
	var verbs []string
	for n := range cmds {
		if g, verb, ok := strings.Cut(n, " "); ok && g == group {
			verbs = append(verbs, verb)
		}
	}
	sort.Strings(verbs)
	switch len(verbs) {
	case 0:
		return ""
	case 1:
		return verbs[0]
	}
	return strings.Join(verbs[:len(verbs)-1], ", ") + " or " + verbs[len(verbs)-1]
}

func printHelp(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "feedmail turns web feeds into email.\n\nCommands:")
	for _, n := range names {
		c := cmds[n]
		fmt.Fprintf(w, "  feedmail %s %s\n      %s\n", n, c.usage, c.summary)
	}
	fmt.Fprintln(w, "\nConfiguration is read from FEEDMAIL_* environment variables; see the README.")
}

// flags makes a FlagSet for a subcommand whose errors come back as values.
func flags(a *app, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by run
	// The flag package calls Usage on -h and on every parse error; the
	// flag list is for -h only (an error is one line and the usage line).
	fs.Usage = func() {
		if a.helpAsked {
			fs.SetOutput(a.stderr)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
		}
	}
	return fs
}

// parseFlags parses args and turns flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// noArgs is a usage error when positional arguments follow the flags.
// parseNoArgs parses args into fs and refuses positional arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return noArgs(fs)
}

func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// subcommand is one verb of a command group ("credits grant", "digest set").
type subcommand struct {
	name string
	run  func(ctx context.Context, a *app, args []string) error
}

// dispatch runs the subcommand named by args[0]; a missing or unknown one is
// a usage error that lists the group's verbs in order.
func dispatch(ctx context.Context, a *app, args []string, subs []subcommand) error {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	list := strings.Join(names, ", ")
	if i := strings.LastIndex(list, ", "); i >= 0 {
		list = list[:i] + " or " + list[i+2:]
	}
	if len(args) == 0 {
		return fmt.Errorf("%w: which one? %s", errUsage, list)
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, a, args[1:])
		}
	}
	return fmt.Errorf("%w: unknown subcommand %q (%s)", errUsage, args[0], list)
}
