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
		"credits": {groupUsage(creditsSubs()), "credit ledger: balance, grant (creates the account, releases held mail), ledger", cmdCredits},
		"digest":  {groupUsage(digestSubs()), "digests: set (creates the account; prints the next slot), list, delete", cmdDigest},
		"pause":   {pauseUsage, "pause a feed (every delivery of it, or the one --channel/--target pick) or the whole account: nothing mailed or charged until --until or resume", cmdPause},
		"resume":  {resumeUsage, "end a pause (see pause)", cmdResume},
		"account": {groupUsage(accountSubs()), "a person's account: status (bounces, latest reports), export (JSON: subscriptions with their consent, digests, ledger, purchases, mail reports), delete, and JSON API tokens (token create, list, revoke)", cmdAccount},
		// OPML in and out (cmd_opml.go)
		"import-opml":  {importOPMLUsage, "subscribe a person (created if missing) to every feed of an OPML file; JSON report; exit 3 when some feeds failed", cmdImportOPML},
		"export-opml":  {exportOPMLUsage, "print a person's subscriptions as OPML", cmdExportOPML},
		"inbound":      {inboundUsage, "read one message that came back (bounce, complaint, unsubscribe) on standard input; JSON line", cmdInbound},
		"subscribe":    {subscribeUsage, "add a subscription (confirmation email unless --confirmed); creates the account. Each --channel and --target is a delivery of its own beside the others (\"created\": true); the same one again takes the new settings", cmdSubscribe},
		"subscription": {groupUsage(subscriptionSubs()), "set a subscription's filters (--include, --exclude) and format", cmdSubscription},
		"preview":      {previewUsage, "the email a feed's newest post (or, with --digest, a digest issue) would make: JSON {subject, html, text, forecast} or a .eml file; sends and stores nothing", cmdPreview},
		"poll":         {pollUsage, "poll one feed now (added if new, followed or not); JSON report", cmdPoll},
		"feed status":  {feedStatusUsage, "JSON: why a feed is polled when it is (state, next poll, reason, validators, errors, recent polls)", cmdFeedStatus},
		"feed host":    {feedHostUsage, "show or set a host's minimum poll interval and back-off (JSON)", cmdFeedHost},
		"feed owner":   {groupUsage(feedOwnerSubs()), "owner-paid feeds: set (the feed's verified publisher pays for its readers), clear", cmdFeedOwner},
		"feed recover": {feedRecoverUsage, "look for a failing or stale feed's new address now (JSON: state, candidates, verdict); --apply moves, offers or tells its readers", cmdFeedRecover},
		"feed move":    {feedMoveUsage, "move every reader of a feed to its new address, telling each once with an undo link (JSON)", cmdFeedMove},
		"mail health":  {mailHealthUsage, "JSON per destination domain: sent, hard and soft bounces, sender-side refusals (blocked, authentication, policy, rate), complaints and their rate, pauses, and what to fix; --feeds: feeds ranked by complaints", cmdMailHealth},
		// more commands register here

		// many people at once (cmd_readers.go)
		"operator token": {"", "make a token for the API's operator routes (POST /api/v1/operator/readers:import): JSON with the token, shown this once, and the FEEDMAIL_OPERATOR_TOKEN_SHA256 setting that makes serve take it", cmdOperatorToken},
		"import-readers": {importReadersUsage, "import many people at once from folders of OPML files (one per person, ADDRESS.opml); no feed fetched, a transaction per few hundred people; JSON report; exit 3 when some entries were not imported", cmdImportReaders},
	}
}

// errUsage marks errors that should be followed by a pointer to help.
var errUsage = errors.New("usage")

// errPartial marks a command that did part of its work and reported the
// rest as failed on stdout (import-opml with feeds that failed): exit
// exPartial, so a script sees it without reading the report.
var errPartial = errors.New("partly done")

// exPartial is the exit status of errPartial.
const exPartial = 3

// run is runIO with nothing on standard input.
func run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) int {
	return runIO(ctx, args, environ, strings.NewReader(""), stdout, stderr)
}

// runIO runs the command line args with environ ("NAME=value" entries) as
// the environment and returns the exit status.
// `feedmail help CMD [SUB]` is `feedmail CMD [SUB] --help`.
func runIO(ctx context.Context, args []string, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || helpFlag(args[0]) || (args[0] == "help" && len(args) == 1) {
		printHelp(stdout, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "help" {
		args = append(slices.Clone(args[1:]), "--help")
	}
	name, cmd, rest, ok := lookUp(cmds, args)
	if !ok {
		return unknownCommand(cmds, args, slices.ContainsFunc(args[1:], helpFlag), stdout, stderr)
	}
	helpAsked := slices.ContainsFunc(rest, helpFlag)
	fail := func(usual int) int {
		if st := failStatus(name); st != 0 {
			return st
		}
		return usual
	}
	a := helpApp(stdout, stderr) // help needs no configuration
	if !helpAsked {
		var err error
		if a, err = newApp(environ, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "feedmail: %v\n", err)
			return fail(1)
		}
	}
	defer a.close()
	a.stdin = stdin
	if err := cmd.run(ctx, a, rest); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "feedmail %s: %v\nusage: feedmail %s %s\n", name, err, name, cmd.usage)
			return 2
		case errors.Is(err, errPartial):
			fmt.Fprintf(stderr, "feedmail %s: %v\n", name, err)
			return exPartial
		default:
			fmt.Fprintf(stderr, "feedmail %s: %v\n", name, err)
			return fail(1)
		}
	}
	return 0
}

// lookUp finds the command args name, one word or two ("feed status"),
// and returns its name, the command, the arguments after the name, and
// false when there is no such command.
func lookUp(cmds map[string]command, args []string) (string, command, []string, bool) {
	name, rest := args[0], args[1:]
	if cmd, ok := cmds[name]; ok {
		return name, cmd, rest, true
	}
	if len(rest) > 0 {
		if cmd, ok := cmds[name+" "+rest[0]]; ok {
			return name + " " + rest[0], cmd, rest[1:], true
		}
	}
	return "", command{}, nil, false
}

// unknownCommand answers a command line that names no command and returns
// the exit status: the first word of a two-word group ("feed") lists the
// group's commands (on stdout with exit 0 when help was asked for, else a
// usage error); anything else is a usage error.
func unknownCommand(cmds map[string]command, args []string, helpAsked bool, stdout, stderr io.Writer) int {
	if verbs := groupVerbs(cmds, args[0]); verbs != "" {
		if helpAsked {
			printGroupCommands(stdout, cmds, args[0])
			return 0
		}
		fmt.Fprintf(stderr, "feedmail %s: which one? %s (run `feedmail help`)\n", args[0], verbs)
		return 2
	}
	words := args[:min(2, len(args))]
	if len(words) == 2 && helpFlag(words[1]) {
		words = words[:1]
	}
	fmt.Fprintf(stderr, "feedmail: unknown command %q (run `feedmail help`)\n", strings.Join(words, " "))
	return 2
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
	fmt.Fprintln(w, "\nExit status: 0 done, 1 failed, 2 usage error, 3 done in part (import-opml, import-readers: some entries failed;\nthe report says which), 75 inbound: try again later.")
	fmt.Fprintln(w, "\nConfiguration is read from FEEDMAIL_* environment variables; see the README.")
}

// flags makes a FlagSet for the command or subcommand name ("subscribe",
// "digest set") whose errors come back as values.
func flags(a *app, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by run
	// The flag package calls Usage on -h and on every parse error; the
	// help is for -h only (an error is one line and the usage line).
	fs.Usage = func() {
		if a.helpAsked {
			printCommandHelp(a.stdout, name, fs)
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
	name    string
	usage   string // arguments after the name
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

// named reports whether args start with the subcommand's name, one word
// or more ("token create").
func (s subcommand) named(args []string) bool {
	words := strings.Fields(s.name)
	return len(args) >= len(words) && slices.Equal(args[:len(words)], words)
}

// dispatch runs the subcommand of group (groups) named by args[0]; a
// missing or unknown one is a usage error that lists the group's verbs in
// order. Asked for help without a known verb, it prints the group's help
// and returns flag.ErrHelp.
func dispatch(ctx context.Context, a *app, group string, args []string) error {
	subs := groups()[group]
	if a.helpAsked && !slices.ContainsFunc(subs, func(s subcommand) bool { return s.named(args) }) {
		printGroupHelp(a.stdout, group, subs)
		return flag.ErrHelp
	}
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
		if s.named(args) {
			return s.run(ctx, a, args[len(strings.Fields(s.name)):])
		}
	}
	return fmt.Errorf("%w: unknown subcommand %q (%s)", errUsage, args[0], list)
}
