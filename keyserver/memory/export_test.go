package memory

// Stored counts the map's entries, expired ones included, so tests can see
// whether the sweep has run.
func Stored(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
