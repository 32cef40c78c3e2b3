package main

import (
	"net/url"
	"strconv"
	"strings"
)

// A URL with a password can end up where the tool quotes what it was
// given: "redlock run job redis://:pw@host -- cmd" (the URL taken for an
// argument after NAME), or "--ttl redis://:pw@host" (a flag's value).
// FuzzArgs found both. The tool knows which passwords its command line
// and $REDLOCK_SERVERS carry, and every message it prints hides them,
// wherever they turn up.

// hidden is what a message shows instead of a password.
const hidden = "xxxxx"

// minBarePassword is the shortest password hidden wherever it appears in
// a message. A shorter one is hidden only where it stands in a URL
// (":pw@"): hiding "ab" everywhere would garble the message and show
// the password all the same.
const minBarePassword = 6

// secrets are the passwords of the URLs among the tool's arguments and
// in $REDLOCK_SERVERS: each as written and as decoded.
type secrets []string

// secretsOf finds the passwords of the URLs in args and env: an
// argument, a comma-separated part of one, or what follows a flag's '='.
func secretsOf(args []string, env string) secrets {
	var s secrets
	for _, part := range strings.FieldsFunc(strings.Join(append(args, env), "\n"), func(r rune) bool {
		return r == '\n' || r == ',' || r == '='
	}) {
		part = strings.TrimSpace(part)
		if _, rest, ok := strings.Cut(part, "://"); ok {
			if at := strings.LastIndex(rest, "@"); at >= 0 {
				if _, pw, ok := strings.Cut(rest[:at], ":"); ok && pw != "" {
					s = append(s, pw)
				}
			}
		}
		// Also a URL without a scheme ("//:pw@host"), which FromURL
		// refuses but a message could quote.
		if u, err := url.Parse(part); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				s = append(s, pw)
			}
		}
	}
	return s
}

// hide returns msg with every password of s replaced, also in the form
// %q gives it.
func (s secrets) hide(msg string) string {
	for _, pw := range s {
		quoted := strconv.Quote(pw)
		for _, form := range []string{pw, quoted[1 : len(quoted)-1]} {
			if len(form) >= minBarePassword {
				msg = strings.ReplaceAll(msg, form, hidden)
			} else {
				msg = strings.ReplaceAll(msg, ":"+form+"@", ":"+hidden+"@")
			}
		}
	}
	return msg
}
