package redlockotel

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures Hooks.
type Option func(*config)

type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	noLockName     bool
}

// WithMeterProvider sets where the metrics go; nil, or no such option,
// means the global meter provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meterProvider = mp }
}

// WithTracerProvider sets where the spans go; nil, or no such option,
// means the global tracer provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// WithoutLockName leaves the lock's name out of the metrics' attributes,
// for programs whose lock names are many (one per object): each name
// would be a time series of its own. Spans keep the name.
func WithoutLockName() Option {
	return func(c *config) { c.noLockName = true }
}
