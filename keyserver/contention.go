package keyserver

import "context"

// ContentionWatcher is a Notifier that can tell a key's holder that
// someone waits for it: the redlock client's Lock.Contended. A watch is
// set up only when the holder asks, so that a lock nobody asks about costs
// nothing more.
type ContentionWatcher interface {
	Notifier
	// WatchContention watches key's line for the holder whose token is
	// token. contended is closed once a waiter joins the line after the
	// watch was set up, or at once when the line already holds one (its
	// places outlive a waiter by LineTTL at most, so a waiter that just
	// left may still count). broken is closed instead when the watch
	// broke (a lost connection): a waiter may have joined unseen, and the
	// caller may watch again. stop ends the watch and must be called
	// exactly once. ctx bounds only the setting up of the watch.
	//
	// It is advice: a waiter may have left already, and no waiter is ever
	// granted the key while the holder holds it.
	WatchContention(ctx context.Context, key, token string) (contended, broken <-chan struct{}, stop func(), err error)
}
