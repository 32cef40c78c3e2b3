package goredis

// PubSubsOpened returns how many PubSubs s's Watch has opened.
func PubSubsOpened(s *Server) int64 { return s.sub.opened.Load() }
