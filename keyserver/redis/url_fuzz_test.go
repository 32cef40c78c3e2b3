package redis_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/goredlock/goredlock/keyserver/redis"
)

// FuzzFromURL feeds FromURL arbitrary text: it must not panic, and an
// error must never show the URL's password, whole or in part.
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
		if pw, ok := u.User.Password(); ok && len(pw) >= 6 && strings.Contains(err.Error(), pw) {
			t.Fatalf("FromURL's error shows the password: %v", err)
		}
	})
}
