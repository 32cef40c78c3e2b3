package redisscript

import "testing"

func TestReleaseChannelKeepsTheHashTag(t *testing.T) {
	for key, want := range map[string]string{
		"job":       "{job}:released",
		"{job}:7":   "{job}:7:released", // its own tag
		"a{b}c":     "a{b}c:released",
		"{}job":     "{{}job}:released", // an empty tag is no tag
		"a}b{":      "{a}b{}:released",  // no '}' after the '{'
		"{a}{b}":    "{a}{b}:released",  // the first tag counts
		"{{a}}":     "{{a}}:released",   // tag "{a"
		"job:{}{x}": "{job:{}{x}}:released",
	} {
		if got := ReleaseChannel(key); got != want {
			t.Errorf("ReleaseChannel(%q) = %q, want %q", key, got, want)
		}
	}
}
