package rueidis

// SubscriberConnections returns how many connections s's Watch has opened.
func SubscriberConnections(s *Server) int64 { return s.sub.opened.Load() }
