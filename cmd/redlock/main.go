package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

func main() {
	t := &tool{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ}
	os.Exit(t.main(os.Args[1:]))
}

// tool is one invocation of redlock: its standard streams and
// environment, so that tests can run it in-process too.
type tool struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	environ        func() []string

	mu    sync.Mutex  // serialises lines on stderr: the client logs from its goroutines
	quiet atomic.Bool // the client's warnings would repeat what the tool says
	addrs []string    // host:port of each server, set before the client is made
	// first reports the servers that failed a run's first attempt; nil
	// for the other subcommands.
	first *firstAttempt
	// secrets are the passwords of the URLs given, which no message shows.
	secrets secrets
}

// serverName is server i's host:port, as the tool's messages name it.
func (t *tool) serverName(i int) string {
	if i >= 0 && i < len(t.addrs) {
		return t.addrs[i]
	}
	return "#" + strconv.Itoa(i+1)
}

// main runs the subcommand args name and returns the exit status.
func (t *tool) main(args []string) int {
	t.secrets = secretsOf(args, t.getenv("REDLOCK_SERVERS"))
	var err error
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch sub {
	case "run":
		err = t.run(args[1:])
	case "status":
		err = t.status(args[1:])
	case "leader":
		err = t.leader(args[1:])
	case "doctor":
		err = t.doctor(args[1:])
	case "-h", "-help", "--help":
		err = errHelp("")
	case "help":
		err = helpFor(args[1:])
	case "version", "-version", "--version":
		err = t.version(args[1:])
	case "":
		err = usagef("", "no subcommand")
	default:
		err = usagef("", "unknown subcommand %q", sub)
	}
	return t.exit(err)
}

// exit prints what err says and returns its exit status.
func (t *tool) exit(err error) int {
	var (
		ee *exitError
		eh errHelp
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &eh):
		fmt.Fprint(t.stdout, help[string(eh)])
		return exitOK
	case errors.As(err, &ee):
		if ee.msg != "" {
			t.say(ee.msg)
		}
		return ee.code
	}
	// Not reached: run and status return exitErrors.
	t.say(failf(exitUnavailable, "%v", err).msg)
	return exitUnavailable
}

// say prints one message, on one line of stderr.
func (t *tool) say(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.stderr, t.secrets.hide(oneLine(msg)))
}

// sayf prints a message in the tool's voice.
func (t *tool) sayf(format string, args ...any) {
	t.say("redlock: " + fmt.Sprintf(format, args...))
}
