package keyserver

import "context"

// Identifier is a KeyServer that can tell which store it reaches, so that
// a client can refuse to count one store's votes twice: two KeyServer
// values can reach one Redis (two URLs that name it differently, say),
// which would then grant a quorum alone.
type Identifier interface {
	KeyServer
	// ServerID returns an identity that two servers share only when they
	// reach the same store; for Redis, its run id, which changes when it
	// restarts.
	ServerID(ctx context.Context) (string, error)
}
