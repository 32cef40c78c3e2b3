package redlockotel

import "strings"

// setNames returns the number of names of a set's operation (AcquireAll,
// TryAcquireAll, DoAll, DoAllOrSkip), 0 for any other. The hooks name a
// set by its names joined by commas, without duplicates; a name that
// contains a comma itself counts as more than one.
func setNames(op, name string) int {
	switch op {
	case "acquire_all", "try_acquire_all", "do_all", "do_all_or_skip":
		return strings.Count(name, ",") + 1
	}
	return 0
}
