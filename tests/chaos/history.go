package chaos

import (
	"math"
	"sync"
	"time"
)

// Never stands for an event that did not happen (a lock never lost) or a
// time that is not known (the Until of a Do whose lock fn cannot see).
const Never = time.Duration(math.MaxInt64)

// Workload names the way a grant was taken and held.
type Workload string

// The workloads of the suite.
const (
	Acquire   Workload = "acquire"   // Acquire, a short random hold, Release
	Do        Workload = "do"        // Do with a long job under keep-alive
	KeepAlive Workload = "keepalive" // Acquire, KeepAlive by hand through a long job, Release
	DoOrSkip  Workload = "doorskip"  // DoOrSkip with a short job
	Holdout   Workload = "holdout"   // Acquire, hold to the end of the validity, Release

	AcquireAll Workload = "acquireall" // AcquireAll of two or three names, a short random hold, Release

	Permit   Workload = "permit"   // a semaphore's permit: Acquire, a hold (KeepAlive now and then), Release; or Do
	Reader   Workload = "reader"   // a read-write lock's read hold: RLock, a hold, Release; or RDo with a long job
	Writer   Workload = "writer"   // a read-write lock's write hold: Lock, a short hold, Release; or Do
	Leader   Workload = "leader"   // an election's leadership: Campaign, lead for a long job, resign
	Observer Workload = "observer" // Leader reads and Observe streams of an election; holds nothing
)

// Primitive names what a grant is of: the lock, or one of the primitives
// on the same quorum. Each has its own checker.
type Primitive string

// The primitives, in the order the reports list them.
const (
	LockPrim      Primitive = "lock"
	SemaphorePrim Primitive = "semaphore"
	RWMutexPrim   Primitive = "read-write lock"
	ElectionPrim  Primitive = "election"
	// SetPrim is the locks taken as sets (AcquireAll): one record per
	// name, checked by the lock's rules (CheckSets), on names of their
	// own, so that the lock's own numbers stay comparable between runs.
	SetPrim Primitive = "lock in a set"
)

// Grant is one lock as its holder saw it. Every time is an offset from the
// start of its History, on the process's monotonic clock.
type Grant struct {
	ID       int // its index in the history, set by History.Add
	Client   int // the client (an independent process) that held it
	Workload Workload
	Name     string
	Token    string // tells grants apart; never printed
	Fence    uint64 // fencing token (a leader's term); 0 when the lock carries none
	Permits  int    // the semaphore's permit count, for a permit
	// Set is, on each record of a set grant (AcquireAll), every name of
	// the set in the order asked for; nil for any other grant. A set is
	// recorded once per name (perName), each with that name's fence, so
	// that the per-name checks see it as a hold of each of its names.
	Set []string

	Asked      time.Duration // when the call that returned it began; 0 when not recorded
	Granted    time.Duration // when the grant was returned to the caller (fn began, for Do)
	FirstUntil time.Duration // Until when it was returned; Never if not known
	Until      time.Duration // Until at its end, after every extension; Never if not known
	Released   time.Duration // when Release was called (fn returned, for Do); Never if not
	Lost       time.Duration // when the holder heard that it was lost; Never if it was not
	Margin     time.Duration // the loss margin in force: the loss is due by Until − Margin
}

// End is when the grant stopped excluding others: when it was released or
// ran out, whichever was first. Where Until is not known, the holder's
// own view stands in for it: released, or told that the lock was lost.
func (g Grant) End() time.Duration {
	if g.Until != Never {
		return min(g.Released, g.Until)
	}
	return min(g.Released, g.Lost)
}

// leads reports whether g stands for its whole grant when grants are
// counted: every grant does, except the records of a set's names after
// its first.
func (g Grant) leads() bool { return len(g.Set) == 0 || g.Set[0] == g.Name }

// History collects the grants of one run on one monotonic clock. It is
// safe for concurrent use.
type History struct {
	start time.Time

	mu     sync.Mutex
	grants []Grant
}

// NewHistory starts a history whose clock reads zero now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now returns the time since the history began.
func (h *History) Now() time.Duration { return time.Since(h.start) }

// At returns t as an offset on the history's clock; t must carry a
// monotonic reading, as time.Now and a lock's Until do.
func (h *History) At(t time.Time) time.Duration { return t.Sub(h.start) }

// Add records a finished grant and returns its ID.
func (h *History) Add(g Grant) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	g.ID = len(h.grants)
	h.grants = append(h.grants, g)
	return g.ID
}

// Grants returns a copy of the grants recorded so far.
func (h *History) Grants() []Grant {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Grant(nil), h.grants...)
}
