package memory

// Stored counts the map's entries, expired ones included, so tests can see
// whether the sweep has run.
func Stored(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// Watchers counts the watches of key that were neither woken nor stopped.
func Watchers(s *Server, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns[key])
}
