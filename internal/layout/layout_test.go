package layout

import "testing"

func TestFenceKeyKeepsTheSlot(t *testing.T) {
	for key, want := range map[string]string{
		"jobs":          "{jobs}:fence",
		"app:{42}:jobs": "app:{42}:jobs:fence",
		"{}jobs":        "{{}jobs}:fence",
	} {
		if got := FenceKey(key); got != want {
			t.Errorf("FenceKey(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestRankOf(t *testing.T) {
	for token, want := range map[string]string{
		"0000019a2b3c4d5e.0123456789abcdef0123456789abcdef":  "0000019a2b3c4d5e.01234567",
		"0000019a2b3c4d5e.0123456789abcdef0123456789abcde":   "", // one short
		"0000019a2b3c4d5e.0123456789abcdef0123456789abcdef0": "", // one long
		"0000019a2b3c4d5e-0123456789abcdef0123456789abcdef":  "", // no dot
		"3f2a8c4e-7d1b-4f6a-9c2e-5b8d1a7f3e90":               "", // a UUID
		"":                                                   "",
	} {
		if got := RankOf(token); got != want {
			t.Errorf("RankOf(%q) = %q, want %q", token, got, want)
		}
	}
}
