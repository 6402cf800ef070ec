package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/feedmail/feedmail/internal/clock"
)

// helpFlag reports whether the argument s asks for help.
func helpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" || s == "--h" }

// helpApp returns the app a command runs with when help was asked for:
// no configuration is read and nothing is logged, so help works whatever
// the environment holds; the command stops at its flags.
func helpApp(stdout, stderr io.Writer) *app {
	return &app{log: slog.New(slog.DiscardHandler), clock: clock.Real{}, stdout: stdout, stderr: stderr,
		stdin: strings.NewReader(""), helpAsked: true}
}

// groups returns the subcommands of each command that has them, by the
// command's name: one table for dispatch, the usage lines and help.
func groups() map[string][]subcommand {
	return map[string][]subcommand{
		"account":      accountSubs(),
		"credits":      creditsSubs(),
		"digest":       digestSubs(),
		"feed owner":   feedOwnerSubs(),
		"subscription": subscriptionSubs(),
	}
}

// groupUsage returns a group's usage: each verb with its arguments,
// separated by " | ".
func groupUsage(subs []subcommand) string {
	parts := make([]string, len(subs))
	for i, s := range subs {
		parts[i] = strings.TrimSpace(s.name + " " + s.usage)
	}
	return strings.Join(parts, " | ")
}

// helpFor returns the usage (the arguments after the name) and summary of
// the command or subcommand name ("subscribe", "feed status", "digest
// set"), and false when there is none.
func helpFor(name string) (usage, summary string, ok bool) {
	if c, ok := commands()[name]; ok {
		return c.usage, c.summary, true
	}
	// The group is the first word ("account" of "account token create")
	// or, for a two-word command with subcommands, the first two ("feed
	// owner" of "feed owner set").
	for i, c := range name {
		if c != ' ' {
			continue
		}
		group, verb := name[:i], name[i+1:]
		for _, s := range groups()[group] {
			if s.name == verb {
				return s.usage, s.summary, true
			}
		}
	}
	return "", "", false
}

// sentence returns summary as a sentence: capital first letter, final
// full stop.
func sentence(summary string) string {
	r, n := utf8.DecodeRuneInString(summary)
	s := string(unicode.ToUpper(r)) + summary[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// printCommandHelp writes what `feedmail help NAME` and `feedmail NAME
// --help` print: the usage line, the one-sentence summary and fs's flags.
func printCommandHelp(w io.Writer, name string, fs *flag.FlagSet) {
	usage, summary, _ := helpFor(name)
	fmt.Fprintf(w, "usage: feedmail %s\n\n%s\n", strings.TrimSpace(name+" "+usage), sentence(summary))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// printGroupHelp writes the help of a command with subcommands: its
// usage line, summary, and each subcommand with its own usage and summary.
func printGroupHelp(w io.Writer, group string, subs []subcommand) {
	_, summary, _ := helpFor(group)
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	fmt.Fprintf(w, "usage: feedmail %s %s ...\n\n%s\n\nSubcommands:\n", group, strings.Join(names, "|"), sentence(summary))
	for _, s := range subs {
		fmt.Fprintf(w, "  feedmail %s %s %s\n      %s\n", group, s.name, s.usage, sentence(s.summary))
	}
	fmt.Fprintf(w, "\nRun `feedmail help %s SUBCOMMAND` for its flags.\n", group)
}

// printGroupCommands writes the help of the first word of two-word
// commands ("feed"): each command with its usage and summary.
func printGroupCommands(w io.Writer, cmds map[string]command, group string) {
	var names []string
	for n := range cmds {
		if g, _, ok := strings.Cut(n, " "); ok && g == group {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	fmt.Fprintf(w, "usage: feedmail %s %s ...\n\nCommands:\n", group, groupVerbs(cmds, group))
	for _, n := range names {
		fmt.Fprintf(w, "  feedmail %s %s\n      %s\n", n, cmds[n].usage, sentence(cmds[n].summary))
	}
	fmt.Fprintf(w, "\nRun `feedmail help %s COMMAND` for its flags.\n", group)
}
