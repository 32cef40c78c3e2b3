package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/internal/startcall"
	goredisks "github.com/goredlock/goredlock/keyserver/goredis"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// completion collects the answer of a started call; a second answer
// fails the test.
type completion struct {
	t       *testing.T
	answers chan startcall.Answer
}

func newCompletion(t *testing.T) *completion {
	return &completion{t: t, answers: make(chan startcall.Answer, 1)}
}

func (c *completion) Continue() bool { return true }

func (c *completion) Complete(a startcall.Answer) {
	select {
	case c.answers <- a:
	default:
		c.t.Error("a started call answered twice")
	}
}

func (c *completion) answer(t *testing.T) startcall.Answer {
	t.Helper()
	select {
	case a := <-c.answers:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("a started call was never answered")
		return startcall.Answer{}
	}
}

// start starts c on s, failing the test if the server declines it, and
// returns its answer.
func start(t *testing.T, s *redis.Server, c startcall.Call) startcall.Answer {
	t.Helper()
	if c.Deadline.IsZero() {
		c.Deadline = time.Now().Add(5 * time.Second)
	}
	to := newCompletion(t)
	if !startcall.Of(s).Start(context.Background(), c, to) {
		t.Fatalf("call %+v not started: the go-redis transport no longer starts commands (keyserver/redis's commandStarter changed?)", c)
	}
	return to.answer(t)
}

func newServer(t *testing.T, addr string) *redis.Server {
	t.Helper()
	client := goredis.NewClient(&goredis.Options{Addr: addr})
	s := goredisks.New(client)
	t.Cleanup(func() {
		s.Close()
		client.Close()
	})
	return s
}

// TestStartedCalls: the Server starts a lock's calls on the go-redis
// transport (no goroutine waits for each: the profile's largest cost after
// the system calls), and they get the blocking methods' answers, alone
// and among many, started and blocking, in the same pipelines.
func TestStartedCalls(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := newServer(t, node.Addr())
	checkScripting(t, s)
	const ttl = time.Minute
	call := func(op startcall.CallOp, key, token string) startcall.Call {
		return startcall.Call{Op: op, Key: key, Token: token, TTL: ttl}
	}

	if a := start(t, s, call(startcall.CallAcquireOrHolder, "k", "t1")); a.Err != nil || !a.OK {
		t.Fatalf("SET NX on a free key: %+v", a)
	}
	if a := start(t, s, call(startcall.CallAcquireOrHolder, "k", "t2")); a.Err != nil || a.OK || a.Holder.Left <= 0 {
		t.Fatalf("held by t1: %+v, want refused with the holder (the script after the SET NX)", a)
	}
	c := call(startcall.CallAcquire, "k2", "t1")
	c.Incarnation = true
	if a := start(t, s, c); a.Err != nil || !a.OK || a.IncarnationErr != nil || a.Incarnation.ID == "" {
		t.Fatalf("acquire with the incarnation: %+v", a)
	}

	// A call whose deadline passed before it was sent is not sent.
	late := call(startcall.CallAcquire, "late", "t1")
	late.Deadline = time.Now().Add(-time.Millisecond)
	if a := start(t, s, late); !errors.Is(a.Err, context.DeadlineExceeded) {
		t.Errorf("a call past its deadline: %+v, want context.DeadlineExceeded", a)
	}
	if n := node.MustDo("EXISTS", "late"); n != int64(0) {
		t.Errorf("a call past its deadline was sent: EXISTS late = %v", n)
	}

	// Many at once, started and blocking: each gets its own answer, once.
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				key, token := fmt.Sprintf("many:%d:%d", g, i), fmt.Sprintf("t%d", g)
				if g%2 == 0 {
					to := newCompletion(t)
					c := call(startcall.CallAcquire, key, token)
					c.Deadline = time.Now().Add(5 * time.Second)
					if !startcall.Of(s).Start(ctx, c, to) {
						errs <- fmt.Errorf("%s: not started", key)
						return
					}
					if a := to.answer(t); a.Err != nil || !a.OK {
						errs <- fmt.Errorf("%s started: %+v", key, a)
						return
					}
				} else if ok, err := s.Acquire(ctx, key, token, ttl); err != nil || !ok {
					errs <- fmt.Errorf("%s blocking: %v, %v", key, ok, err)
					return
				}
				if ok, err := s.Release(ctx, key, token); err != nil || !ok {
					errs <- fmt.Errorf("%s release: %v, %v", key, ok, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := node.MustDo("DBSIZE"); n.(int64) > 3 { // the marker, k and k2
		t.Errorf("DBSIZE = %d after every many:* key was released", n)
	}
}

// checkScripting makes a blocking call, which runs the Server's check that
// its Redis runs scripts (a Server starts no call before it passed).
func checkScripting(t *testing.T, s *redis.Server) {
	t.Helper()
	ok, err := s.Acquire(context.Background(), "scripting-checked", "t0", time.Minute)
	if err != nil || !ok {
		t.Fatalf("first call: %v, %v", ok, err)
	}
	if _, err := s.Release(context.Background(), "scripting-checked", "t0"); err != nil {
		t.Fatal(err)
	}
}

// TestStartedCallRefused: a started call to a Redis that refuses
// connections (it stopped after the Server's first call) is answered with
// the refusal, at once.
func TestStartedCallRefused(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := newServer(t, node.Addr())
	checkScripting(t, s)
	node.Kill()
	begun := time.Now()
	a := start(t, s, startcall.Call{Op: startcall.CallAcquire, Key: "k", Token: "t", TTL: time.Minute})
	if !errors.Is(a.Err, syscall.ECONNREFUSED) || !strings.Contains(a.Err.Error(), "refused") {
		t.Errorf("started call: %v, want a refused connection", a.Err)
	}
	if took := time.Since(begun); took > time.Second {
		t.Errorf("answered after %v, want at once", took)
	}
}
