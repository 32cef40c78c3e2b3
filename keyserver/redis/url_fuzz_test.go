package redis_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/goredlock/goredlock/keyserver/redis"
)

// FuzzFromURL feeds FromURL arbitrary text: it must not panic, and an
// error must never show the URL's password (of six characters or more):
// it holds the password no more often than the error of the same URL with
// another password does. That one tells the password from the same
// letters in FromURL's own wording, "ial_ti" in dial_timeout, which the
// fuzzer found; a host or parameter that holds the password is
// TestFromURLErrorsNeverShowThePassword's. (Shorter passwords are in most
// errors' wording, and the errors of two of them can differ by more than
// the password: a host that holds one is left out.)
func FuzzFromURL(f *testing.F) {
	for _, seed := range []string{
		"redis://127.0.0.1:6379",
		"rediss://user:" + pwA + "@host:6380/2?dial_timeout=2s&client_name=x",
		"redis://:" + pwA + pwB + "@host",
		"redis://:p%zz" + pwA + "@host",
		"redis://:" + pwA + "/" + pwB + "@host",
		"redis://host:6379/16",
		"redis://host?db=3&read_timeout=500ms&write_timeout=1",
		"redis://host?unknown=1",
		"unix:///tmp/redis.sock",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := redis.FromURL(raw)
		if err == nil {
			s.Close() //nolint:errcheck // nothing was dialed
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || u.User == nil {
			return
		}
		pw, _ := u.User.Password()
		if len(pw) < 6 || !strings.Contains(err.Error(), pw) {
			return
		}
		other := ""
		if s, err := redis.FromURL(otherPassword(raw)); err == nil {
			s.Close() //nolint:errcheck // nothing was dialed
		} else {
			other = err.Error()
		}
		if strings.Count(err.Error(), pw) > strings.Count(other, pw) {
			t.Fatalf("FromURL's error shows the password: %v", err)
		}
	})
}

// otherPassword returns raw with the letters and digits of its password,
// where url.Parse finds it, each moved on by one ('a' to 'b', '9' to '0'),
// and its %-escapes as they were, so that the URL parses as raw does.
func otherPassword(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	start, end := i+3, len(raw)
	if j := strings.IndexAny(raw[start:], "/?#"); j >= 0 {
		end = start + j
	}
	at := strings.LastIndex(raw[start:end], "@")
	colon := strings.Index(raw[start:max(start, start+at)], ":")
	if at < 0 || colon < 0 {
		return raw
	}
	b := []byte(raw)
	for k := start + colon + 1; k < start+at; k++ {
		switch c := b[k]; {
		case c == '%':
			k += 2
		case c == 'z', c == 'Z':
			b[k] -= 25
		case c == '9':
			b[k] = '0'
		case c >= 'a' && c < 'z', c >= 'A' && c < 'Z', c >= '0' && c < '9':
			b[k]++
		}
	}
	return string(b)
}
