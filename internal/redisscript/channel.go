package redisscript

import "strings"

// ReleaseChannel is the Pub/Sub channel on which Del announces that it
// deleted key, with key as the message. It carries key's Redis Cluster
// hash tag, by keyserver.FenceKey's rule: a key with a tag of its own keeps
// it ("{job}:7" is announced on "{job}:7:released"), and any other key
// becomes the tag ("job" on "{job}:released"). The channel thus hashes to
// the key's slot, as a sharded channel (SPUBLISH) must, although Del uses
// PUBLISH, which every Redis since 2.6 has and a Cluster broadcasts to all
// its nodes. (As with FenceKey, a key that contains '}' without a tag of
// its own gets a channel in another slot; PUBLISH does not mind.)
//
// Two keys can share a channel ("{job}" and "job" both use
// "{job}:released"), and Pub/Sub ignores the database a key is in; a
// subscriber tells the keys apart by the message, and a release in another
// database wakes a waiter early, which then only tries again.
func ReleaseChannel(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + ":released"
		}
	}
	return "{" + key + "}:released"
}
