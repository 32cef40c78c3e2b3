package redlockotel_test

import (
	"context"
	"fmt"
	"log"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/redlock"
	"github.com/goredlock/goredlock/redlockotel"
)

// In a service, the program's OpenTelemetry setup installs the global
// meter and tracer providers (with their exporters), and Hooks needs no
// options.
func Example() {
	srv := memory.New() // three Redis masters in production
	defer srv.Close()
	client, err := redlock.New([]keyserver.KeyServer{srv}, redlock.WithHooks(redlockotel.Hooks()))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close() // before srv.Close: deferred calls run last in, first out

	err = client.Do(context.Background(), "nightly-report", 30*time.Second, func(ctx context.Context) error {
		return nil // the work: the spans it starts with ctx are children of redlock.do
	})
	fmt.Println("done:", err)
	// Output: done: <nil>
}

// What the hooks report, read from the SDK's in-memory reader and span
// recorder instead of an exporter: a Do, and a TryAcquire of the same lock
// made while Do holds it.
func ExampleHooks() {
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	hooks := redlockotel.Hooks(
		redlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		redlockotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))),
	)

	srv := memory.New()
	defer srv.Close()
	client, err := redlock.New([]keyserver.KeyServer{srv}, redlock.WithHooks(hooks))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	err = client.Do(ctx, "nightly-report", 30*time.Second, func(ctx context.Context) error {
		_, err := client.TryAcquire(ctx, "nightly-report", 30*time.Second)
		fmt.Println("second taker:", err)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	client.Close()

	for _, s := range spans.Ended() {
		var events []string
		for _, e := range s.Events() {
			events = append(events, e.Name)
		}
		fmt.Printf("span %s, status %s: %s\n", s.Name(), s.Status().Code, strings.Join(events, ", "))
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	metrics := rm.ScopeMetrics[0].Metrics
	sort.Slice(metrics, func(i, j int) bool { return metrics[i].Name < metrics[j].Name })
	for _, m := range metrics {
		fmt.Printf("%s (%s)\n", m.Name, m.Unit)
		for _, p := range points(m) {
			fmt.Println("  ", p)
		}
	}
	// Output:
	// second taker: redlock: lock "nightly-report" not acquired: held elsewhere: 0 of 1 servers granted, 1 refused, 0 failed
	// span redlock.try_acquire, status Error: redlock.attempt, exception
	// span redlock.do, status Unset: redlock.attempt, redlock.lock.granted, redlock.lock.released
	// redlock.lock.acquire.attempts ({attempt})
	//    redlock.acquire.outcome=acquired redlock.lock.name=nightly-report redlock.operation.name=do: 1
	//    redlock.acquire.outcome=held_elsewhere redlock.lock.name=nightly-report redlock.operation.name=try_acquire: 1
	// redlock.lock.acquire.duration (s)
	//    redlock.acquire.outcome=acquired redlock.lock.name=nightly-report redlock.operation.name=do: 1
	//    redlock.acquire.outcome=held_elsewhere redlock.lock.name=nightly-report redlock.operation.name=try_acquire: 1
	// redlock.lock.hold.duration (s)
	//    redlock.lock.hold.lost=false redlock.lock.name=nightly-report: 1
	// redlock.lock.waiters ({waiter})
	//    redlock.lock.name=nightly-report: 0
}

// points describes the data points of a histogram (their attributes and
// how many values they hold) or a gauge (its value), sorted.
func points(m metricdata.Metrics) []string {
	var lines []string
	add := func(set attribute.Set, count uint64) {
		var kvs []string
		for _, kv := range set.ToSlice() {
			kvs = append(kvs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.Emit()))
		}
		lines = append(lines, fmt.Sprintf("%s: %d", strings.Join(kvs, " "), count))
	}
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, p.Count)
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, p.Count)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, uint64(p.Value))
		}
	}
	sort.Strings(lines)
	return lines
}
