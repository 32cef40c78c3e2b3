package redlockotel

import (
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// scopeName names this package as the instrumentation scope of its meter
// and tracer.
const scopeName = "github.com/goredlock/goredlock/redlockotel"

// The attributes, named after OpenTelemetry's conventions: lowercase,
// dotted namespaces, error.type from the shared registry.
const (
	lockNameKey    = attribute.Key("redlock.lock.name")
	namesKey       = attribute.Key("redlock.lock.names")
	operationKey   = attribute.Key("redlock.operation.name")
	outcomeKey     = attribute.Key("redlock.acquire.outcome")
	attemptsKey    = attribute.Key("redlock.acquire.attempts")
	lostKey        = attribute.Key("redlock.lock.hold.lost")
	heldKey        = attribute.Key("redlock.lock.held")
	serverIndexKey = attribute.Key("redlock.key_server.index")
	serverOpKey    = attribute.Key("redlock.key_server.operation.name")
	errorTypeKey   = attribute.Key("error.type")
)

// instruments are the metrics a reporter records.
type instruments struct {
	acquireDuration metric.Float64Histogram
	acquireAttempts metric.Int64Histogram
	holdDuration    metric.Float64Histogram
	lostLocks       metric.Int64Counter
	serverErrors    metric.Int64Counter
	atRisk          metric.Int64Counter
	contended       metric.Int64Counter
	waiters         metric.Int64Gauge
}

// newInstruments creates the instruments on m. An instrument m refuses is
// reported to OpenTelemetry's error handler, as instrumentation libraries
// do; metrics must not stop a program from taking its locks, so a meter
// that gives no instrument at all gets one that records nothing.
func newInstruments(m metric.Meter) instruments {
	var (
		in   instruments
		errs [8]error
	)
	in.acquireDuration, errs[0] = m.Float64Histogram("redlock.lock.acquire.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time from the start of Acquire, TryAcquire, Do or DoOrSkip to the grant of the lock or the failure."),
		// From one round trip on a local network to the retries of a
		// contended lock.
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
	in.acquireAttempts, errs[1] = m.Int64Histogram("redlock.lock.acquire.attempts",
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made by one acquisition; 0 when its context ended before the first."),
		metric.WithExplicitBucketBoundaries(0, 1, 2, 3, 5, 10, 20, 50, 100))
	in.holdDuration, errs[2] = m.Float64Histogram("redlock.lock.hold.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time from the grant of a lock to its release, or to its loss."),
		// From a short critical section to a job of hours.
		metric.WithExplicitBucketBoundaries(0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 10800))
	in.lostLocks, errs[3] = m.Int64Counter("redlock.lock.losses",
		metric.WithUnit("{loss}"),
		metric.WithDescription("Locks declared lost before they were released: not extended in time, or found held by another holder."))
	in.serverErrors, errs[4] = m.Int64Counter("redlock.key_server.errors",
		metric.WithUnit("{error}"),
		metric.WithDescription("Calls to a key server that failed to answer."))
	in.atRisk, errs[5] = m.Int64Counter("redlock.lock.at_risk",
		metric.WithUnit("{transition}"),
		metric.WithDescription("Held locks that entered the at-risk state: an extension failed to reach a quorum, or less than a third of the TTL was left."))
	in.waiters, errs[6] = m.Int64Gauge("redlock.lock.waiters",
		metric.WithUnit("{waiter}"),
		metric.WithDescription("Waiters ahead of a refused attempt in a key server's line, as the refusal reported: sampled when the client asks the servers anyway."))
	in.contended, errs[7] = m.Int64Counter("redlock.lock.contended",
		metric.WithUnit("{signal}"),
		metric.WithDescription("Held locks told that another call waits in a quorum of their lines (for locks whose holder asked, Lock.Contended)."))
	if err := errors.Join(errs[:]...); err != nil {
		otel.Handle(err)
	}
	if in.acquireDuration == nil {
		in.acquireDuration = noop.Float64Histogram{}
	}
	if in.acquireAttempts == nil {
		in.acquireAttempts = noop.Int64Histogram{}
	}
	if in.holdDuration == nil {
		in.holdDuration = noop.Float64Histogram{}
	}
	if in.lostLocks == nil {
		in.lostLocks = noop.Int64Counter{}
	}
	if in.serverErrors == nil {
		in.serverErrors = noop.Int64Counter{}
	}
	if in.atRisk == nil {
		in.atRisk = noop.Int64Counter{}
	}
	if in.contended == nil {
		in.contended = noop.Int64Counter{}
	}
	if in.waiters == nil {
		in.waiters = noop.Int64Gauge{}
	}
	return in
}
