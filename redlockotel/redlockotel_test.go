package redlockotel_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/keyserver/static"
	"github.com/goredlock/goredlock/redlock"
	"github.com/goredlock/goredlock/redlockotel"
)

var errRefused = errors.New("connection refused")

// The attributes the tests expect.
var (
	lockName = attribute.Key("redlock.lock.name")
	opName   = attribute.Key("redlock.operation.name")
	outcome  = attribute.Key("redlock.acquire.outcome")
	lost     = attribute.Key("redlock.lock.hold.lost")
	index    = attribute.Key("redlock.key_server.index")
	serverOp = attribute.Key("redlock.key_server.operation.name")
	errType  = attribute.Key("error.type")
)

func TestAcquireOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// servers builds the servers; cancel ends the call's context.
		servers func(cancel context.CancelFunc) static.Cluster
		opts    []redlock.ClientOption
		try     bool // TryAcquire instead of Acquire
		expired bool // the context's deadline passed before the call

		wantOutcome  string
		wantAttempts int
		wantErrs     []error
		wantEvents   []string
		wantVotes    map[attribute.Key]int // at least, in the first attempt
		wantErrType  string
	}{{
		name:         "granted",
		servers:      func(context.CancelFunc) static.Cluster { return static.NewCluster(3) },
		wantOutcome:  "acquired",
		wantAttempts: 1,
		wantEvents:   []string{"redlock.attempt", "redlock.lock.granted"},
		wantVotes:    map[attribute.Key]int{"redlock.votes.granted": 2},
	}, {
		name:         "held elsewhere",
		servers:      func(context.CancelFunc) static.Cluster { return static.Table([][]bool{{false}, {false}, {false}}) },
		opts:         []redlock.ClientOption{redlock.WithRetryCount(1), redlock.WithRetryDelay(time.Millisecond)},
		wantOutcome:  "held_elsewhere",
		wantAttempts: 2,
		wantErrs:     []error{redlock.ErrHeldElsewhere, redlock.ErrNotAcquired},
		wantEvents:   []string{"redlock.attempt", "redlock.attempt", "exception"},
		wantVotes:    map[attribute.Key]int{"redlock.votes.refused": 2},
		wantErrType:  "redlock.ErrHeldElsewhere",
	}, {
		name: "held elsewhere, try",
		servers: func(context.CancelFunc) static.Cluster {
			return static.Table([][]bool{{false}, {false}, {true}})
		},
		try:          true,
		wantOutcome:  "held_elsewhere",
		wantAttempts: 1,
		wantErrs:     []error{redlock.ErrHeldElsewhere},
		wantEvents:   []string{"redlock.attempt", "exception"},
		wantVotes:    map[attribute.Key]int{"redlock.votes.refused": 2},
		wantErrType:  "redlock.ErrHeldElsewhere",
	}, {
		// A server's own timeout is its failure, not the caller's
		// cancellation (errors.Is(err, context.DeadlineExceeded) is
		// the caller's deadline alone).
		name: "unavailable",
		servers: func(context.CancelFunc) static.Cluster {
			return static.Cluster{
				static.New(static.WithAcquire(static.Fail(errRefused))),
				static.New(static.WithAcquire(static.Fail(errRefused))),
				static.New(static.WithAcquire(static.Fail(context.DeadlineExceeded))),
			}
		},
		opts:         []redlock.ClientOption{redlock.WithRetryCount(0)},
		wantOutcome:  "unavailable",
		wantAttempts: 1,
		wantErrs:     []error{redlock.ErrNotAcquired, errRefused},
		wantEvents:   []string{"redlock.attempt", "exception"},
		wantVotes:    map[attribute.Key]int{"redlock.votes.failed": 2},
		wantErrType:  "redlock.ErrNotAcquired",
	}, {
		// The caller gave up while the lock was held elsewhere: cancelled
		// comes first. It gives up once every server was asked: a server
		// is asked who it is before its first vote, and an ask the
		// cancellation cuts short is a failure, not a refusal.
		name: "cancelled while waiting",
		servers: func(cancel context.CancelFunc) static.Cluster {
			var asked atomic.Int32
			return static.NewCluster(3, static.WithAcquire(static.Deny),
				static.WithBefore(func(context.Context, static.Call) {
					if asked.Add(1) == 3 {
						cancel()
					}
				}))
		},
		opts:         []redlock.ClientOption{redlock.WithRetryCount(-1)},
		wantOutcome:  "cancelled",
		wantAttempts: 1,
		wantErrs:     []error{context.Canceled, redlock.ErrHeldElsewhere},
		wantEvents:   []string{"redlock.attempt", "exception"},
		wantVotes:    map[attribute.Key]int{"redlock.votes.refused": 2},
		wantErrType:  "redlock.ErrHeldElsewhere",
	}, {
		name:         "deadline passed before the first attempt",
		servers:      func(context.CancelFunc) static.Cluster { return static.NewCluster(3) },
		expired:      true,
		wantOutcome:  "cancelled",
		wantAttempts: 0,
		wantErrs:     []error{context.DeadlineExceeded, redlock.ErrNotAcquired},
		wantEvents:   []string{"exception"},
		wantErrType:  "redlock.ErrNotAcquired",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTelemetry(t)
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			if tc.expired {
				ctx, cancel = context.WithDeadline(bg, time.Now().Add(-time.Second))
				defer cancel()
			}
			servers := tc.servers(cancel)
			client := newClient(t, servers, tm.hooks(), tc.opts...)

			op, acquire := "acquire", client.Acquire
			if tc.try {
				op, acquire = "try_acquire", client.TryAcquire
			}
			l, err := acquire(ctx, "report", time.Second)
			if tc.wantErrs == nil {
				require.NoError(t, err)
				require.NoError(t, l.Release(bg))
			}
			for _, want := range tc.wantErrs {
				require.ErrorIs(t, err, want)
			}
			require.NoError(t, client.Close())

			ms := tm.metrics(t)
			want := key(lockName.String("report"), opName.String(op), outcome.String(tc.wantOutcome))

			d := onlyPoint[float64](t, ms["redlock.lock.acquire.duration"], "s", want)
			assert.Equal(t, uint64(1), d.Count)
			assert.Less(t, d.Sum, 10.0) // seconds, not nanoseconds

			a := onlyPoint[int64](t, ms["redlock.lock.acquire.attempts"], "{attempt}", want)
			assert.Equal(t, uint64(1), a.Count)
			assert.Equal(t, int64(tc.wantAttempts), a.Sum)

			s := tm.span(t)
			assert.Equal(t, "redlock."+op, s.Name())
			assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
			// Key server errors, which may land after the span ended, are
			// TestServerErrors's.
			assert.Equal(t, tc.wantEvents, eventNames(s, "redlock.key_server.error"))
			got := attrs(s.Attributes()...)
			assert.Equal(t, "report", got[lockName])
			assert.Equal(t, tc.wantOutcome, got[outcome])
			assert.Equal(t, int64(tc.wantAttempts), got["redlock.acquire.attempts"])
			if tc.wantErrs == nil {
				assert.Equal(t, codes.Unset, s.Status().Code)
				assert.NotContains(t, got, errType)
			} else {
				assert.Equal(t, codes.Error, s.Status().Code)
				assert.Equal(t, err.Error(), s.Status().Description)
				assert.Equal(t, tc.wantErrType, got[errType])
			}
			for i, e := range events(s, "redlock.attempt") {
				ea := attrs(e.Attributes...)
				assert.Equal(t, int64(i+1), ea["redlock.attempt.number"])
				assert.Equal(t, tc.wantErrs == nil, ea["redlock.attempt.granted"])
				assert.Equal(t, int64(3), ea["redlock.key_server.count"])
				for k, least := range tc.wantVotes {
					assert.GreaterOrEqual(t, ea[k], int64(least), k)
				}
			}
			if !tc.expired {
				requireNoTokens(t, tm, servers)
			}
		})
	}
}

// Every failed call to a key server is counted by server, operation and
// kind of error, and shown on the call's span while it lasts.
func TestServerErrors(t *testing.T) {
	tm := newTelemetry(t)
	servers := static.Cluster{
		static.New(static.WithAcquire(static.Fail(errRefused))),
		static.New(static.WithAcquire(static.Fail(errRefused))),
		static.New(static.WithAcquire(static.Fail(context.DeadlineExceeded))),
	}
	client := newClient(t, servers, tm.hooks(), redlock.WithRetryCount(0))
	_, err := client.Acquire(bg, "report", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.NoError(t, client.Close()) // the third server may answer after Acquire returned

	m := tm.metrics(t)["redlock.key_server.errors"]
	assert.Equal(t, "{error}", m.Unit)
	assert.Equal(t, map[string]int64{
		key(lockName.String("report"), index.Int(0), serverOp.String("acquire"), errType.String("_OTHER")):                   1,
		key(lockName.String("report"), index.Int(1), serverOp.String("acquire"), errType.String("_OTHER")):                   1,
		key(lockName.String("report"), index.Int(2), serverOp.String("acquire"), errType.String("context.DeadlineExceeded")): 1,
	}, counter(t, m))

	// Two failures decided the outcome, so they came before the span ended.
	es := events(tm.span(t), "redlock.key_server.error")
	require.GreaterOrEqual(t, len(es), 2)
	for _, e := range es {
		ea := attrs(e.Attributes...)
		assert.Equal(t, "acquire", ea[serverOp])
		assert.Contains(t, []any{"_OTHER", "context.DeadlineExceeded"}, ea[errType])
	}
}

// The core's clean-ups are reported by the KeyServer method they call:
// the release of a failed attempt's token, and the Extend that cuts the
// keys' TTL at the end of a minimum hold.
func TestServerErrorsOfCleanUps(t *testing.T) {
	failRelease := static.WithRelease(static.Fail(errRefused))
	for _, tc := range []struct {
		name    string
		op      string // the KeyServer method that failed
		servers static.Cluster
		failed  int // how many servers, from the first, the clean-up failed on
		run     func(*redlock.Client) error
	}{{
		name:   "failed attempt",
		op:     "release",
		failed: 1,
		servers: static.Cluster{ // one grant, two refusals: cleaned up where granted
			static.New(failRelease),
			static.New(static.WithAcquire(static.Deny), failRelease),
			static.New(static.WithAcquire(static.Deny), failRelease),
		},
		run: func(c *redlock.Client) error {
			_, err := c.TryAcquire(bg, "report", time.Second)
			if !errors.Is(err, redlock.ErrHeldElsewhere) {
				return fmt.Errorf("got %v, want ErrHeldElsewhere", err)
			}
			return nil
		},
	}, {
		name:    "minimum hold",
		op:      "extend", // the keys' TTL is cut to the rest of the hold
		failed:  3,
		servers: static.NewCluster(3, static.WithExtend(static.Fail(errRefused))),
		run: func(c *redlock.Client) error {
			_, err := c.DoOrSkip(bg, "report", time.Second, func(context.Context) error { return nil },
				redlock.WithMinHold(500*time.Millisecond))
			return err
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTelemetry(t)
			client := newClient(t, tc.servers, tm.hooks())
			require.NoError(t, tc.run(client))
			require.NoError(t, client.Close())

			want := make(map[string]int64)
			for i := range tc.failed {
				want[key(lockName.String("report"), index.Int(i), serverOp.String(tc.op), errType.String("_OTHER"))] = 1
			}
			assert.Equal(t, want, counter(t, tm.metrics(t)["redlock.key_server.errors"]))
		})
	}
}

// A lock held by Do and released: its hold is recorded, not lost; the
// span shows the grant, the keep-alive and the release, and the function's
// context carries the span.
func TestDoReleased(t *testing.T) {
	tm := newTelemetry(t)
	hooks := tm.hooks()
	extended := make(chan struct{})
	var once sync.Once
	report := hooks.Extended
	hooks.Extended = func(ctx context.Context, name string, err error) {
		report(ctx, name, err)
		if err == nil {
			once.Do(func() { close(extended) })
		}
	}
	servers := static.NewCluster(3)
	client := newClient(t, servers, hooks, redlock.WithKeepAliveInterval(10*time.Millisecond))

	var inner trace.SpanContext
	err := client.Do(bg, "report", time.Second, func(ctx context.Context) error {
		inner = trace.SpanContextFromContext(ctx)
		<-extended
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, client.Close())

	s := tm.span(t)
	assert.Equal(t, "redlock.do", s.Name())
	assert.Equal(t, codes.Unset, s.Status().Code)
	assert.Equal(t, s.SpanContext(), inner, "fn runs inside the span")
	// A keep-alive extension in flight when fn returns is cancelled by the
	// release, and its straggler may report after the release: the only
	// server errors this run may show.
	for _, e := range events(s, "redlock.key_server.error") {
		a := attrs(e.Attributes...)
		assert.Equal(t, "extend", a["redlock.key_server.operation.name"], a)
		assert.Equal(t, "context.Canceled", a[errType], a)
	}
	names := eventNames(s, "redlock.key_server.error")
	require.GreaterOrEqual(t, len(names), 4, names)
	assert.Equal(t, []string{"redlock.attempt", "redlock.lock.granted"}, names[:2])
	assert.Contains(t, names, "redlock.lock.extended")
	assert.Equal(t, "redlock.lock.released", names[len(names)-1])
	assert.NotContains(t, names, "redlock.lock.lost")
	released := attrs(events(s, "redlock.lock.released")[0].Attributes...)
	assert.Greater(t, released["redlock.lock.held"], 0.0)
	assert.NotContains(t, released, errType)

	ms := tm.metrics(t)
	hold := onlyPoint[float64](t, ms["redlock.lock.hold.duration"], "s", key(lockName.String("report"), lost.Bool(false)))
	assert.Equal(t, uint64(1), hold.Count)
	assert.InDelta(t, released["redlock.lock.held"], hold.Sum, 1e-9)
	assert.NotContains(t, ms, "redlock.lock.losses")
	assert.Contains(t, histogram[float64](t, ms["redlock.lock.acquire.duration"]),
		key(lockName.String("report"), opName.String("do"), outcome.String("acquired")))
	requireNoTokens(t, tm, servers)
}

// A quorum found holding another token when Do's keep-alive extends: the
// lock is lost then, counted once, its hold recorded once (as lost), and
// Do's span says so in order.
func TestDoLostByExtension(t *testing.T) {
	tm := newTelemetry(t)
	servers := static.NewCluster(3, static.WithExtend(static.Deny))
	client := newClient(t, servers, tm.hooks(), redlock.WithKeepAliveInterval(10*time.Millisecond))

	err := client.Do(bg, "report", time.Second, func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.NoError(t, client.Close())

	s := tm.span(t)
	assert.Equal(t, "redlock.do", s.Name())
	assert.Equal(t, codes.Error, s.Status().Code)
	assert.Equal(t, "redlock.ErrLockLost", attrs(s.Attributes()...)[errType])
	assert.Equal(t, []string{
		"redlock.attempt", "redlock.lock.granted", "redlock.lock.lost",
		"redlock.lock.extend_failed", "redlock.lock.released", "exception",
	}, eventNames(s))
	assert.Equal(t, "redlock.ErrLockLost", attrs(events(s, "redlock.lock.extend_failed")[0].Attributes...)[errType])
	assert.Equal(t, "redlock.ErrLockLost", attrs(events(s, "redlock.lock.released")[0].Attributes...)[errType])

	requireLostOnce(t, tm, "report")
	requireNoTokens(t, tm, servers)
}

// No extension answered in time: the lock runs out while Do holds it. The
// core reports that loss without a context, so the span shows it at the
// release, once.
func TestDoLostByExpiry(t *testing.T) {
	tm := newTelemetry(t)
	servers := static.NewCluster(3, static.WithExtend(static.Fail(errRefused)))
	client := newClient(t, servers, tm.hooks())

	err := client.Do(bg, "report", 200*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.NoError(t, client.Close())

	s := tm.span(t)
	names := eventNames(s)
	require.GreaterOrEqual(t, len(names), 6, names)
	assert.Equal(t, []string{"redlock.attempt", "redlock.lock.granted"}, names[:2])
	assert.Equal(t, []string{"redlock.lock.lost", "redlock.lock.released", "exception"}, names[len(names)-3:])
	assert.Len(t, events(s, "redlock.lock.lost"), 1)
	failed := events(s, "redlock.lock.extend_failed")
	require.NotEmpty(t, failed)
	assert.Equal(t, "redlock.ErrNotAcquired", attrs(failed[0].Attributes...)[errType])
	assert.NotEmpty(t, events(s, "redlock.key_server.error"))

	requireLostOnce(t, tm, "report")
	assert.NotEmpty(t, events(s, "redlock.lock.at_risk"), "at risk at the first failed extension, before the loss")
	assert.Equal(t, int64(1), counter(t, tm.metrics(t)["redlock.lock.at_risk"])[key(lockName.String("report"))])
	errs := counter(t, tm.metrics(t)["redlock.key_server.errors"])
	for i := 0; i < 3; i++ {
		assert.Positive(t, errs[key(lockName.String("report"), index.Int(i), serverOp.String("extend"), errType.String("_OTHER"))], "server %d", i)
	}
	requireNoTokens(t, tm, servers)
}

// A lock from Acquire that runs out: counted and recorded as lost, and its
// late Release records nothing more.
func TestAcquireLostThenReleased(t *testing.T) {
	tm := newTelemetry(t)
	servers := static.NewCluster(3)
	client := newClient(t, servers, tm.hooks())

	l, err := client.Acquire(bg, "report", 100*time.Millisecond)
	require.NoError(t, err)
	<-l.Done()
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
	require.ErrorIs(t, l.Release(bg), redlock.ErrNotHeld)
	require.NoError(t, client.Close())

	held := requireLostOnce(t, tm, "report")
	// Declared lost at Until − loss margin: 100 ms − drift (3 ms) − margin (10 ms).
	assert.GreaterOrEqual(t, held, 0.085)
	assert.Less(t, held, 1.0)
	assert.Equal(t, []string{"redlock.acquire"}, spanNames(tm.spans.Ended()), "no span outlives its call")
}

// requireLostOnce checks that one lock called name was lost and its hold
// recorded once, as lost, and returns the hold in seconds.
func requireLostOnce(t *testing.T, tm *telemetry, name string) float64 {
	t.Helper()
	ms := tm.metrics(t)
	m := ms["redlock.lock.losses"]
	assert.Equal(t, "{loss}", m.Unit)
	assert.Equal(t, map[string]int64{key(lockName.String(name)): 1}, counter(t, m))
	hold := onlyPoint[float64](t, ms["redlock.lock.hold.duration"], "s", key(lockName.String(name), lost.Bool(true)))
	assert.Equal(t, uint64(1), hold.Count)
	return hold.Sum
}

// A skip is no error: the span's status stays unset.
func TestDoOrSkipSkips(t *testing.T) {
	tm := newTelemetry(t)
	servers := static.Table([][]bool{{false}, {false}, {false}}) // held elsewhere: skipped at the first attempt
	client := newClient(t, servers, tm.hooks())

	ran, err := client.DoOrSkip(bg, "report", time.Second, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.False(t, ran)
	require.NoError(t, client.Close())

	s := tm.span(t)
	assert.Equal(t, "redlock.do_or_skip", s.Name())
	assert.Equal(t, codes.Unset, s.Status().Code)
	assert.Equal(t, []string{"redlock.attempt"}, eventNames(s))
	assert.Equal(t, "held_elsewhere", attrs(s.Attributes()...)[outcome])
	want := key(lockName.String("report"), opName.String("do_or_skip"), outcome.String("held_elsewhere"))
	assert.Equal(t, []string{want}, keys(histogram[float64](t, tm.metrics(t)["redlock.lock.acquire.duration"])))
	requireNoTokens(t, tm, servers)
}

func TestWithoutLockName(t *testing.T) {
	tm := newTelemetry(t)
	servers := static.NewCluster(3)
	client := newClient(t, servers, tm.hooks(redlockotel.WithoutLockName()))

	l, err := client.Acquire(bg, "invoice-81723", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	require.NoError(t, client.Close())

	ms := tm.metrics(t)
	assert.Equal(t, []string{key(opName.String("acquire"), outcome.String("acquired"))},
		keys(histogram[float64](t, ms["redlock.lock.acquire.duration"])))
	assert.Equal(t, []string{key(lost.Bool(false))}, keys(histogram[float64](t, ms["redlock.lock.hold.duration"])))
	assert.Equal(t, "invoice-81723", attrs(tm.span(t).Attributes()...)[lockName], "spans keep the name")
}

// With no options, the global providers get the metrics and spans.
func TestGlobalProviders(t *testing.T) {
	tm := newTelemetry(t)
	otel.SetMeterProvider(tm.mp)
	otel.SetTracerProvider(tm.tp)
	t.Cleanup(func() {
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
	})
	servers := static.NewCluster(3)
	client := newClient(t, servers, redlockotel.Hooks())

	require.NoError(t, client.Do(bg, "report", time.Second, func(context.Context) error { return nil }))
	require.NoError(t, client.Close())

	assert.Equal(t, "redlock.do", tm.span(t).Name())
	ms := tm.metrics(t)
	assert.Contains(t, ms, "redlock.lock.acquire.duration")
	assert.Contains(t, ms, "redlock.lock.hold.duration")
}

// Spans started inside Do's function are children of Do's span.
func TestDoSpanIsParent(t *testing.T) {
	tm := newTelemetry(t)
	client := newClient(t, static.NewCluster(3), tm.hooks())
	tracer := tm.tp.Tracer("test")
	require.NoError(t, client.Do(bg, "report", time.Second, func(ctx context.Context) error {
		_, span := tracer.Start(ctx, "work")
		span.End()
		return nil
	}))
	spans := tm.spans.Ended()
	require.Equal(t, []string{"work", "redlock.do"}, spanNames(spans))
	assert.Equal(t, spans[1].SpanContext().SpanID(), spans[0].Parent().SpanID())
}

// keys returns the keys of points, sorted.
func keys[V any](points map[string]V) []string {
	var ks []string
	for k := range points {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// A refused attempt samples the waiters ahead of it in the servers' lines.
func TestWaitersAreSampled(t *testing.T) {
	tm := newTelemetry(t)
	servers := static.NewCluster(3, static.WithAcquire(static.Reply{Left: time.Hour, Rank: -1, Ahead: 4}))
	client := newClient(t, servers, tm.hooks())
	_, err := client.Acquire(bg, "report", time.Second, redlock.WithRetryCount(1), redlock.WithRetryDelay(time.Millisecond))
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere)
	require.NoError(t, client.Close())
	m, ok := tm.metrics(t)["redlock.lock.waiters"]
	require.True(t, ok, "no waiters gauge")
	g, ok := m.Data.(metricdata.Gauge[int64])
	require.True(t, ok, "%T", m.Data)
	require.Len(t, g.DataPoints, 1)
	assert.Equal(t, int64(4), g.DataPoints[0].Value)
}

// A holder that asks is told when another call waits: counted.
func TestContendedIsCounted(t *testing.T) {
	tm := newTelemetry(t)
	var servers []keyserver.KeyServer
	for range 3 {
		s := memory.New()
		t.Cleanup(func() { s.Close() })
		servers = append(servers, s)
	}
	holder, err := redlock.New(servers, redlock.WithHooks(tm.hooks()))
	require.NoError(t, err)
	waiter, err := redlock.New(servers)
	require.NoError(t, err)
	l, err := holder.Acquire(bg, "report", time.Minute)
	require.NoError(t, err)
	contended := l.Contended()
	ctx, cancel := context.WithCancel(bg)
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(ctx, "report", time.Minute, redlock.WithRetryCount(-1))
		waited <- err
	}()
	select {
	case <-contended:
	case <-time.After(10 * time.Second):
		t.Fatal("not told of the waiter")
	}
	cancel()
	require.ErrorIs(t, <-waited, context.Canceled)
	require.NoError(t, l.Release(bg))
	require.NoError(t, waiter.Close())
	require.NoError(t, holder.Close())
	assert.Equal(t, int64(1), counter(t, tm.metrics(t)["redlock.lock.contended"])[key(lockName.String("report"))])
}
