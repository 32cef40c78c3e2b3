// Package testkit holds what the module's conformance kits share
// (keyserver/keyservertest, keyserver/redis/transporttest and
// internal/startcall/startcalltest): tokens that carry a rank, keys no
// other test uses, and a checker of one call's (ok, err).
package testkit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
)

// Ranked returns a token that carries a rank, as the redlock client's do:
// call orders the calls (lower is earlier), and attempt tells the tokens
// of one call apart.
func Ranked(call, attempt uint32) string {
	return fmt.Sprintf("%016x.%08x%024x", 0x19a2b3c4d00+uint64(call), call, attempt)
}

// Expect returns a function that fails t unless a call answered want
// without an error.
func Expect(t *testing.T, what string, want bool) func(bool, error) {
	t.Helper()
	return func(got bool, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: unexpected error: %v", what, err)
		}
		if got != want {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// RandomKey names a key, under prefix, that no other test uses, on a
// server tests may share.
func RandomKey(t *testing.T, prefix string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return prefix + ":" + t.Name() + ":" + hex.EncodeToString(b[:])
}
