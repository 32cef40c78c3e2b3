package keyserver_test

import (
	"fmt"

	"github.com/goredlock/goredlock/keyserver"
)

// A server that keeps lines reports a holder by rank, never by token, and
// stores a promise where a release hands a key to the next waiter.
func ExampleCompare() {
	holder := "0000019a2b3c4d5e.0123456789abcdef0123456789abcdef" // began first
	caller := "0000019a2b3c4d5f.0000000089abcdef0123456789abcdef"
	fmt.Println(keyserver.Compare(holder, caller) < 0)
	fmt.Println(keyserver.Compare("another library's token", caller) == 0)

	promise := keyserver.PromiseOf(caller) // what the key holds once promised to caller's call
	fmt.Println(promise)
	// Any attempt of the same call (the same first 25 bytes) claims it.
	fmt.Println(keyserver.Compare(promise, "0000019a2b3c4d5f.00000000ffffffffffffffffffffffff") == 0)
	// Output:
	// true
	// true
	// 0000019a2b3c4d5f.00000000~~~~~~~~~~~~~~~~~~~~~~~~
	// true
}
