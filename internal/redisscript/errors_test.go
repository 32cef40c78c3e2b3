package redisscript

import "testing"

func TestPermanentReply(t *testing.T) {
	for msg, want := range map[string]bool{
		"WRONGTYPE Operation against a key holding the wrong kind of value":           true,
		"ERR Error running script (call to f_x): @user_script:2: WRONGTYPE Operation": true,
		"WRONGPASS invalid username-password pair or user is disabled.":               true,
		"NOAUTH Authentication required.":                                             true,
		"NOPERM this user has no permissions to run the 'evalsha' command":            true,
		"NOSCRIPT No matching script. Please use EVAL.":                               true,
		"LOADING Redis is loading the dataset in memory":                              false,
		"BUSY Redis is busy running a script.":                                        false,
		"ERR max number of clients reached":                                           false,
		"OOM command not allowed when used memory > 'maxmemory'.":                     false,
	} {
		if got := PermanentReply(msg); got != want {
			t.Errorf("PermanentReply(%q) = %v, want %v", msg, got, want)
		}
	}
}
