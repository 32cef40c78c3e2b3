package adapt_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/adapt"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// slow is a Transport whose Do ignores its context: it returns when
// release is closed.
type slow struct {
	release chan struct{}
	closed  bool
	mu      sync.Mutex
}

func (s *slow) Do(ctx context.Context, cmd, keys []string, args ...string) (any, error) {
	<-s.release
	return "OK", nil
}
func (s *slow) ReplyText(error) (string, bool) { return "", false }
func (s *slow) PubSub(context.Context, redis.PubSubHandler) (redis.PubSub, error) {
	return nil, errors.New("none")
}
func (s *slow) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
func (s *slow) String() string                  { return "slow:6379" }
func (s *slow) Connections() (int64, bool)      { return 3, true }
func (s *slow) isClosed() bool                  { s.mu.Lock(); defer s.mu.Unlock(); return s.closed }
func (s *slow) answer()                         { close(s.release) }
func newSlow() *slow                            { return &slow{release: make(chan struct{})} }
func bg() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }

func TestDetachReturnsWhenTheContextEnds(t *testing.T) {
	s := newSlow()
	d := adapt.Detach(s)
	ctx, cancel := bg()
	done := make(chan error, 1)
	go func() {
		_, err := d.Do(ctx, []string{"GET"}, []string{"k"})
		done <- err
	}()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled, "Do returns at its context's end, its command still running")

	closed := make(chan struct{})
	go func() { d.Close(); close(closed) }() //nolint:errcheck // slow's Close cannot fail
	select {
	case <-closed:
		t.Fatal("Close returned while a command was still running")
	case <-time.After(20 * time.Millisecond):
	}
	s.answer()
	<-closed
	assert.True(t, s.isClosed(), "Close closes the transport once its commands ended")
}

func TestDetachKeepsTheAnswerAndTheTransportsViews(t *testing.T) {
	s := newSlow()
	s.answer()
	d := adapt.Detach(s)
	ctx, cancel := bg()
	defer cancel()
	v, err := d.Do(ctx, []string{"GET"}, []string{"k"})
	require.NoError(t, err)
	assert.Equal(t, "OK", v)
	n, ok := d.(redis.ConnectionCounter).Connections()
	assert.True(t, ok)
	assert.Equal(t, int64(3), n, "the transport's count of connections")
	assert.Equal(t, "slow:6379", d.(interface{ String() string }).String(), "the transport's name")
	v, err = d.Do(context.Background(), []string{"GET"}, []string{"k"}) // a context that never ends
	require.NoError(t, err)
	assert.Equal(t, "OK", v)
	require.NoError(t, d.Close())
}

// handler records what a PubSub tells it.
type handler struct {
	mu     sync.Mutex
	events []string
	broken chan error
}

func (h *handler) add(e string)                    { h.mu.Lock(); h.events = append(h.events, e); h.mu.Unlock() }
func (h *handler) Message(channel, payload string) { h.add("message " + channel) }
func (h *handler) Subscribed(channel string)       { h.add("subscribed " + channel) }
func (h *handler) Unsubscribed(channel string)     { h.add("unsubscribed " + channel) }
func (h *handler) Broken(err error)                { h.broken <- err }

func TestHookedPubSub(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(chan error)
		want string
	}{
		{"the client reports an error", func(ends chan error) { ends <- errors.New("connection reset") }, "connection reset"},
		{"the client ends its hooks", func(ends chan error) { close(ends) }, "ended the subscriber connection's hooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &handler{broken: make(chan error, 1)}
			ends := make(chan error, 1)
			var sent []string
			closes := 0
			p := adapt.HookedPubSub(h, ends, adapt.Send{
				Subscribe:   func(_ context.Context, ch string) error { sent = append(sent, "SUBSCRIBE "+ch); return nil },
				Unsubscribe: func(_ context.Context, ch string) error { sent = append(sent, "UNSUBSCRIBE "+ch); return nil },
			}, func() { closes++ })
			require.NoError(t, p.Subscribe(context.Background(), "a"))
			require.NoError(t, p.Unsubscribe(context.Background(), "a"))
			assert.Equal(t, []string{"SUBSCRIBE a", "UNSUBSCRIBE a"}, sent)
			adapt.Confirm(h, "subscribe", "a")
			adapt.Confirm(h, "unsubscribe", "a")
			adapt.Confirm(h, "psubscribe", "b") // not a kind the Server asks for
			assert.Equal(t, []string{"subscribed a", "unsubscribed a"}, h.events)
			tc.end(ends)
			assert.ErrorContains(t, <-h.broken, tc.want, "the handler hears the break")
			require.NoError(t, p.Close())
			require.NoError(t, p.Close())
			assert.Equal(t, 1, closes, "Close closes the connection once")
		})
	}
}

func TestHookedPubSubCloseStopsTheWatch(t *testing.T) {
	h := &handler{broken: make(chan error, 1)}
	p := adapt.HookedPubSub(h, make(chan error), adapt.Send{}, func() {})
	require.NoError(t, p.Close()) // goleak finds the watch if it outlived Close
	select {
	case err := <-h.broken:
		t.Fatalf("a closed PubSub reported a break: %v", err)
	default:
	}
}
