package keyserver

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
