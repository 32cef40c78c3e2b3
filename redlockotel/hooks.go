package redlockotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/goredlock/goredlock/redlock"
)

// Hooks returns the hooks that report a client's locks to OpenTelemetry;
// give them to redlock.New with redlock.WithHooks. One set of hooks may
// serve several clients. The instruments are created here; one that the
// meter refuses is reported to OpenTelemetry's error handler (otel.Handle)
// and never keeps a lock from being taken.
func Hooks(opts ...Option) redlock.Hooks {
	var c config
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	r := &reporter{
		instruments: newInstruments(c.meterProvider.Meter(scopeName)),
		tracer:      c.tracerProvider.Tracer(scopeName),
		noLockName:  c.noLockName,
	}
	return redlock.Hooks{
		Start:        r.start,
		End:          r.end,
		Attempt:      r.attempt,
		Acquired:     r.acquired,
		Extended:     r.extended,
		Lost:         r.lost,
		AtRisk:       r.atRiskEntered,
		Contended:    r.contendedSignal,
		Released:     r.released,
		ServerFailed: r.serverFailed,
	}
}

// reporter turns the hooks' events into metrics and span events.
type reporter struct {
	instruments
	tracer     trace.Tracer
	noLockName bool
}

// start begins the call's span, named after the operation.
// A set's span carries the number of its names too.
func (r *reporter) start(ctx context.Context, op, name string) context.Context {
	n := setNames(op, name)
	attrs := []attribute.KeyValue{lockNameKey.String(name)}
	if n > 0 {
		attrs = append(attrs, namesKey.Int(n))
	}
	ctx, span := r.tracer.Start(ctx, "redlock."+op,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
	return withCall(ctx, &call{op: op, name: name, names: n, span: span})
}

// end ends the call's span, with status Error if the call failed. It
// checks the operation too: under a Start hook that wraps this one and
// skips it, a call inside Do's function of the same name would find Do's
// call in its context.
func (r *reporter) end(ctx context.Context, op, name string, err error) {
	c := callFor(ctx, name)
	if c == nil || c.op != op {
		return
	}
	if err != nil {
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, err.Error())
		c.span.SetAttributes(errorTypeKey.String(errorType(err)))
	}
	c.span.End()
}

// attempt samples the waiters ahead of a refused attempt, and adds its
// votes to the call's span.
func (r *reporter) attempt(ctx context.Context, a redlock.Attempt) {
	if !a.OK && a.Refused > 0 {
		r.waiters.Record(ctx, int64(a.Ahead), metric.WithAttributes(r.lockAttrs(a.Name, 0)...))
	}
	c := callFor(ctx, a.Name)
	if c == nil || !c.span.IsRecording() {
		return
	}
	c.span.AddEvent("redlock.attempt", trace.WithAttributes(
		attribute.Int("redlock.attempt.number", a.Number),
		attribute.Bool("redlock.attempt.granted", a.OK),
		attribute.Float64("redlock.attempt.duration", a.Duration.Seconds()),
		attribute.Int("redlock.key_server.count", a.Servers),
		attribute.Int("redlock.votes.granted", a.Granted),
		attribute.Int("redlock.votes.refused", a.Refused),
		attribute.Int("redlock.votes.failed", a.Failed),
	))
}

// acquired records how an acquisition ended, on the acquire metrics and
// the call's span.
func (r *reporter) acquired(ctx context.Context, a redlock.Acquisition) {
	outcome := outcomeKey.String(acquireOutcome(ctx, a.Err))
	c := callFor(ctx, a.Name)
	attrs := r.lockAttrs(a.Name, 3)
	if c != nil {
		attrs = append(attrs, operationKey.String(c.op))
		if c.names > 0 {
			attrs = append(attrs, namesKey.Int(c.names))
		}
	}
	attrs = append(attrs, outcome)
	set := metric.WithAttributes(attrs...)
	r.acquireDuration.Record(ctx, a.Duration.Seconds(), set)
	r.acquireAttempts.Record(ctx, int64(a.Attempts), set)
	if c == nil {
		return
	}
	c.span.SetAttributes(outcome, attemptsKey.Int(a.Attempts))
	if a.Err == nil {
		c.span.AddEvent("redlock.lock.granted")
	}
}

// extended adds an extension made during Do, by its keep-alive or its
// function, to Do's span. An extension that finds the lock held by
// another holder is the moment it is lost.
func (r *reporter) extended(ctx context.Context, name string, err error) {
	c := callFor(ctx, name)
	if c == nil {
		return
	}
	if err == nil {
		c.span.AddEvent("redlock.lock.extended")
		return
	}
	c.span.AddEvent("redlock.lock.extend_failed", trace.WithAttributes(errorTypeKey.String(errorType(err))))
	if errors.Is(err, redlock.ErrLockLost) && c.markLost() {
		c.span.AddEvent("redlock.lock.lost")
	}
}

// lost counts a lost lock, records its hold, and adds the loss to Do's
// span when it happens while Do holds the lock.
func (r *reporter) lost(ctx context.Context, name string, held time.Duration) {
	r.lostLocks.Add(ctx, 1, metric.WithAttributes(r.lockAttrs(name, 0)...))
	r.holdDuration.Record(ctx, held.Seconds(), metric.WithAttributes(append(r.lockAttrs(name, 1), lostKey.Bool(true))...))
	if c := callFor(ctx, name); c != nil && c.markLost() {
		c.span.AddEvent("redlock.lock.lost")
	}
}

// atRiskEntered counts a held lock entering the at-risk state, and adds
// it to Do's span.
func (r *reporter) atRiskEntered(ctx context.Context, name string, left time.Duration) {
	r.atRisk.Add(ctx, 1, metric.WithAttributes(r.lockAttrs(name, 0)...))
	if c := callFor(ctx, name); c != nil {
		c.span.AddEvent("redlock.lock.at_risk", trace.WithAttributes(attribute.Float64("redlock.lock.validity_left", left.Seconds())))
	}
}

// contendedSignal counts a held lock told that another call waits for
// it, and adds it to Do's span.
func (r *reporter) contendedSignal(ctx context.Context, name string) {
	r.contended.Add(ctx, 1, metric.WithAttributes(r.lockAttrs(name, 0)...))
	if c := callFor(ctx, name); c != nil {
		c.span.AddEvent("redlock.lock.contended")
	}
}

// released records a lock's hold, unless it was lost first (lost recorded
// it then), and adds the release to Do's span, with the loss if no
// extension reported it.
func (r *reporter) released(ctx context.Context, name string, held time.Duration, err error) {
	lostFirst := lostBeforeRelease(err)
	if !lostFirst {
		r.holdDuration.Record(ctx, held.Seconds(), metric.WithAttributes(append(r.lockAttrs(name, 1), lostKey.Bool(false))...))
	}
	c := callFor(ctx, name)
	if c == nil {
		return
	}
	if lostFirst && c.markLost() {
		c.span.AddEvent("redlock.lock.lost")
	}
	attrs := []attribute.KeyValue{heldKey.Float64(held.Seconds())}
	if err != nil {
		attrs = append(attrs, errorTypeKey.String(errorType(err)))
	}
	c.span.AddEvent("redlock.lock.released", trace.WithAttributes(attrs...))
}

// serverFailed counts a key server's failure and adds it to the call's
// span while the span lasts: calls still running when the outcome was
// decided may fail after the call returned.
func (r *reporter) serverFailed(ctx context.Context, op, name string, server int, err error) {
	index := serverIndexKey.Int(server)
	sop := serverOpKey.String(op)
	etype := errorTypeKey.String(serverErrorType(err))
	r.serverErrors.Add(ctx, 1, metric.WithAttributes(append(r.lockAttrs(name, 3), index, sop, etype)...))
	if c := callFor(ctx, name); c != nil {
		c.span.AddEvent("redlock.key_server.error", trace.WithAttributes(index, sop, etype))
	}
}

// lockAttrs returns the metrics' attributes for the lock called name,
// with room for extra more.
func (r *reporter) lockAttrs(name string, extra int) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 1+extra)
	if !r.noLockName {
		attrs = append(attrs, lockNameKey.String(name))
	}
	return attrs
}
