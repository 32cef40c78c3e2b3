package redlockotel_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/keyserver/static"
	"github.com/goredlock/goredlock/redlock"
	"github.com/goredlock/goredlock/redlockotel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var bg = context.Background()

// telemetry is an in-memory OpenTelemetry pipeline: the metrics are read
// on demand, the spans recorded as they end.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tm := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tm.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tm.reader))
	tm.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tm.spans))
	t.Cleanup(func() {
		require.NoError(t, tm.mp.Shutdown(bg))
		require.NoError(t, tm.tp.Shutdown(bg))
	})
	return tm
}

// hooks returns redlockotel's hooks reporting to tm.
func (tm *telemetry) hooks(opts ...redlockotel.Option) redlock.Hooks {
	return redlockotel.Hooks(append([]redlockotel.Option{
		redlockotel.WithMeterProvider(tm.mp), redlockotel.WithTracerProvider(tm.tp),
	}, opts...)...)
}

// newClient returns a client over servers reporting through hooks, closed
// when the test ends.
func newClient(t *testing.T, servers static.Cluster, hooks redlock.Hooks, opts ...redlock.ClientOption) *redlock.Client {
	t.Helper()
	c, err := redlock.New(servers.KeyServers(), append([]redlock.ClientOption{redlock.WithHooks(hooks)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// metrics collects the metrics recorded so far, by name. Close the client
// first: a server call still running when a call returned may report a
// failure later.
func (tm *telemetry) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tm.reader.Collect(bg, &rm))
	ms := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, "github.com/goredlock/goredlock/redlockotel", sm.Scope.Name)
		for _, m := range sm.Metrics {
			ms[m.Name] = m
		}
	}
	return ms
}

// span returns the one ended span, and fails unless there is exactly one.
func (tm *telemetry) span(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := tm.spans.Ended()
	require.Len(t, spans, 1, "spans: %v", spanNames(spans))
	return spans[0]
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	return names
}

// eventNames returns the names of s's events, in order, leaving out
// those called one of except.
func eventNames(s sdktrace.ReadOnlySpan, except ...string) []string {
	var names []string
	for _, e := range s.Events() {
		if !slices.Contains(except, e.Name) {
			names = append(names, e.Name)
		}
	}
	return names
}

// events returns s's events called name.
func events(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var es []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			es = append(es, e)
		}
	}
	return es
}

// attrs returns kvs as a map, for comparisons that ignore order.
func attrs(kvs ...attribute.KeyValue) map[attribute.Key]any {
	m := make(map[attribute.Key]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.AsInterface()
	}
	return m
}

// histogram returns the data points of the histogram m, which must be of
// kind N, keyed by their attributes (see key).
func histogram[N int64 | float64](t *testing.T, m metricdata.Metrics) map[string]metricdata.HistogramDataPoint[N] {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[N])
	require.True(t, ok, "%s is a %T", m.Name, m.Data)
	require.Equal(t, metricdata.CumulativeTemporality, h.Temporality)
	points := make(map[string]metricdata.HistogramDataPoint[N])
	for _, p := range h.DataPoints {
		points[key(p.Attributes.ToSlice()...)] = p
	}
	return points
}

// onlyPoint returns the one point of the histogram m, which must be
// measured in unit and have the attributes want (a key).
func onlyPoint[N int64 | float64](t *testing.T, m metricdata.Metrics, unit, want string) metricdata.HistogramDataPoint[N] {
	t.Helper()
	require.Equal(t, unit, m.Unit, m.Name)
	points := histogram[N](t, m)
	require.Equal(t, []string{want}, keys(points), m.Name)
	return points[want]
}

// counter returns the values of the monotonic sum m by attributes.
func counter(t *testing.T, m metricdata.Metrics) map[string]int64 {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", m.Name, m.Data)
	require.True(t, s.IsMonotonic, m.Name)
	points := make(map[string]int64)
	for _, p := range s.DataPoints {
		points[key(p.Attributes.ToSlice()...)] = p.Value
	}
	return points
}

// key writes an attribute set as one comparable string, in the set's
// order (sorted by key).
func key(kvs ...attribute.KeyValue) string {
	set := attribute.NewSet(kvs...)
	var b strings.Builder
	for _, kv := range set.ToSlice() {
		b.WriteString(string(kv.Key) + "=" + kv.Value.Emit() + " ")
	}
	return strings.TrimSpace(b.String())
}

// requireNoTokens fails if any token the servers were given shows up in a
// span (name, attribute, event, status) or a metric attribute.
func requireNoTokens(t *testing.T, tm *telemetry, servers static.Cluster) {
	t.Helper()
	var tokens []string
	for _, s := range servers {
		for _, c := range s.Calls() {
			if c.Op != static.OpWatch { // a watch carries no token ("-")
				tokens = append(tokens, c.Token)
			}
		}
	}
	require.NotEmpty(t, tokens)
	var texts []string
	addAttrs := func(kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			texts = append(texts, kv.Value.Emit())
		}
	}
	for _, s := range tm.spans.Ended() {
		texts = append(texts, s.Name(), s.Status().Description)
		addAttrs(s.Attributes())
		for _, e := range s.Events() {
			texts = append(texts, e.Name)
			addAttrs(e.Attributes)
		}
	}
	for _, m := range tm.metrics(t) {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				addAttrs(p.Attributes.ToSlice())
			}
		case metricdata.Histogram[int64]:
			for _, p := range d.DataPoints {
				addAttrs(p.Attributes.ToSlice())
			}
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				addAttrs(p.Attributes.ToSlice())
			}
		}
	}
	require.NotEmpty(t, texts)
	for _, tok := range tokens {
		for _, s := range texts {
			require.NotContains(t, s, tok)
		}
	}
}
