// Package miniredis holds the tests of goredlock against miniredis
// (github.com/alicebob/miniredis/v2), the in-memory Redis emulator most Go
// projects test with: the production key server (keyserver/redis, over
// redis.FromURL) on miniredis servers run inside the test process. It is a
// module of its own, so that miniredis never enters the core module's
// go.mod, and it is not published: it has no API, only its tests.
//
// What works there, and what does not and why, is the README's engine
// table; each row of it is a test here. Two differences from Redis shape
// the tests:
//
//   - miniredis expires keys only when told to (Miniredis.FastForward),
//     never as time passes: a lock that is not released stays until the
//     test fast-forwards the servers past its TTL. Its TIME follows the
//     real clock unless SetTime fixes it, and the scripts of the
//     primitives' holds keep their expiries by TIME: a test that lets
//     such holds expire moves both clocks (TestConformance).
//   - a fresh miniredis holds no goredlock:incarnation marker, so that a
//     client's first grants there wait out the quarantine of a store that
//     may have just lost its data; the tests seed the marker an hour old,
//     as internal/redistest does for real servers.
package miniredis
