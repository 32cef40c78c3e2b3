package redisscript

import "strings"

// permanentCodes are the Redis error replies that the same call will get
// again, whatever the timing. Replies such as LOADING, BUSY, MASTERDOWN,
// TRYAGAIN, OOM or "ERR max number of clients reached" can clear up and
// are left out.
var permanentCodes = []string{
	"WRONGTYPE", // also inside the message of a script error
	"NOAUTH", "WRONGPASS", "ERR AUTH", "invalid password", "ERR Client sent AUTH",
	"NOPERM",
	"NOSCRIPT", // only ever returned to the caller after the EVAL fallback
	"ERR unknown command",
	"CROSSSLOT", // a key whose fence key hashes elsewhere in a Cluster
}

// PermanentReply reports whether msg, an error reply from Redis, is one
// that retrying the same call cannot fix: a key holding another type of
// value, failed authentication, a missing permission, a server that
// refuses the scripts. Every Redis key server marks such errors with
// keyserver.Permanent, so that the client stops retrying them.
func PermanentReply(msg string) bool {
	for _, code := range permanentCodes {
		if strings.Contains(msg, code) {
			return true
		}
	}
	return false
}
