package redlock

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
)

// Health is how a lock stands, as its holder sees it: between held and
// lost, at risk leaves the holder time to act (finish, hand over).
type Health int

const (
	// Held: valid, and the last extension, if any, reached a quorum.
	Held Health = iota
	// AtRisk: still valid, but an extension failed to reach a quorum,
	// or less than a third of the TTL is left ("At risk" in
	// docs/design.md).
	AtRisk
	// Lost: released, or declared lost; Err says which.
	Lost
)

// String returns "held", "at risk" or "lost".
func (h Health) String() string {
	switch h {
	case Held:
		return "held"
	case AtRisk:
		return "at risk"
	}
	return "lost"
}

// risk is what a Lock's holder asked to be told (at risk, contended),
// guarded by the Lock's mu; made when first needed.
type risk struct {
	contended chan struct{} // Contended's (contended.go); nil until asked for
	entered   bool          // at risk since the last good extension (or the grant)
	ch        chan struct{} // AtRisk's; nil until asked for
	timer     clock.Timer   // fires at at; nil until ch or the hook needs it
}

// r returns the lock's risk state, made when first needed, so that most
// locks carry none. l.mu must be held.
func (l *Lock) r() *risk {
	if l.risk == nil {
		l.risk = new(risk)
	}
	return l.risk
}

// Health returns how the lock stands now.
func (l *Lock) Health() Health {
	if l.zero() {
		return Lost
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
	switch {
	case l.err != nil:
		return Lost
	case l.checkRisk():
		return AtRisk
	}
	return Held
}

// AtRisk returns a channel that is closed when the lock enters the at-risk
// state (see Health), or ends, whichever comes first. A successful
// extension ends the risk: call AtRisk again for the channel of the next
// one. Do's function reaches it through LockFromContext.
func (l *Lock) AtRisk() <-chan struct{} {
	if l.zero() {
		return closedChan
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
	if l.r().ch == nil {
		l.r().ch = make(chan struct{})
		if l.err != nil || l.checkRisk() {
			close(l.r().ch)
		}
	}
	l.armRisk()
	return l.r().ch
}

// armRisk starts the timer that enters the at-risk state when validity
// runs low, if something listens and it is not running. l.mu must be held.
func (l *Lock) armRisk() {
	if l.r().timer != nil || l.err != nil || l.r().entered {
		return
	}
	l.r().timer = l.c.clock.AfterFunc(l.riskAt().Sub(l.c.clock.Now()), func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.checkRisk()
	})
}

// riskAt is when the validity left falls below a third of the TTL. l.mu
// must be held.
func (l *Lock) riskAt() time.Time { return l.until.Add(-l.b.ttl / 3) }

// checkRisk enters the at-risk state if validity ran low, and reports
// whether the lock is at risk. l.mu must be held, and l.err nil.
func (l *Lock) checkRisk() bool {
	if !l.r().entered && l.c.clock.Since(l.riskAt()) >= 0 {
		l.enterRisk()
	}
	return l.r().entered
}

// enterRisk moves a held lock to the at-risk state. l.mu must be held.
func (l *Lock) enterRisk() {
	if l.err != nil || l.r().entered {
		return
	}
	l.r().entered = true
	if l.r().ch != nil {
		close(l.r().ch)
	}
	if h := l.c.hooks.AtRisk; h != nil {
		h(l.callCtx, l.name, l.until.Sub(l.c.clock.Now()))
	}
}

// extendedRisk records a good extension: the risk, if any, is over, and
// the next one is watched for. l.mu must be held, validity set anew.
func (l *Lock) extendedRisk() {
	if l.risk == nil {
		return // nothing listens, and no risk was recorded
	}
	if l.risk.entered {
		l.risk.entered = false
		if l.risk.ch != nil {
			l.risk.ch = make(chan struct{})
		}
	}
	switch {
	case l.risk.timer != nil:
		l.risk.timer.Reset(l.riskAt().Sub(l.c.clock.Now()))
	case l.risk.ch != nil || l.c.hooks.AtRisk != nil:
		l.armRisk()
	}
}

// failedExtension puts the lock at risk after an extension that failed
// while ctx was alive. l.mu must be held, and l.err nil.
func (l *Lock) failedExtension(ctx context.Context) {
	if ctx.Err() == nil {
		l.enterRisk()
	}
}

// endRisk closes AtRisk's channel and stops the timer as the lock ends.
// l.mu must be held.
func (l *Lock) endRisk() {
	if l.risk == nil {
		return
	}
	if l.risk.ch != nil && !l.risk.entered {
		close(l.risk.ch)
		l.risk.entered = true
	}
	if l.risk.timer != nil {
		l.risk.timer.Stop()
	}
}
