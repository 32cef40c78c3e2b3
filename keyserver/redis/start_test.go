package redis_test

import (
	"context"
	"github.com/goredlock/goredlock/internal/startcall"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// completion collects the answers of started calls, and how often the
// server asked whether to go on.
type completion struct {
	answers chan startcall.Answer
	asked   chan struct{} // a receive per Continue
	goOn    bool
}

func newCompletion(goOn bool) *completion {
	return &completion{answers: make(chan startcall.Answer, 1), asked: make(chan struct{}, 4), goOn: goOn}
}

func (c *completion) Continue() bool {
	c.asked <- struct{}{}
	return c.goOn
}

func (c *completion) Complete(a startcall.Answer) {
	select {
	case c.answers <- a:
	default:
		panic("a second answer") // Complete once per call
	}
}

// answer waits for the answer, failing the test after a bound only a
// defect reaches.
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

// start starts c on s and returns its answer.
func start(t *testing.T, s *redis.Server, c startcall.Call) startcall.Answer {
	t.Helper()
	c.Deadline = time.Now().Add(time.Second)
	to := newCompletion(true)
	require.True(t, startcall.Of(s).Start(context.Background(), c, to), "call %+v not started", c)
	return to.answer(t)
}

// TestStartAnswersAsTheBlockingMethods: a call started on a FromURL
// Server gets the answer its blocking method gives, also when it takes a
// second command (a refused SET NX, NOSCRIPT), with the incarnation when
// asked for.
func TestStartAnswersAsTheBlockingMethods(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	ctx := context.Background()
	const ttl = time.Minute
	call := func(op startcall.CallOp, key, token string) startcall.Call {
		return startcall.Call{Op: op, Key: key, Token: token, TTL: ttl}
	}

	// A fresh Server's first acquire starts as the scripting check and
	// the SET NX in one script; the next as a SET NX.
	a := start(t, s, call(startcall.CallAcquireOrHolder, "k0", "t1"))
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "checked and set on a free key")
	a = start(t, s, call(startcall.CallAcquireOrHolder, "k", "t1"))
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "SET NX on a free key")
	a = start(t, s, call(startcall.CallAcquireOrHolder, "k", "t2"))
	require.NoError(t, a.Err)
	assert.False(t, a.OK, "held by t1")
	assert.Greater(t, a.Holder.Left, time.Duration(0), "the refusal describes the holder (the script after the SET NX)")
	a = start(t, s, call(startcall.CallAcquire, "k", "t1"))
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "the holder acquires again (the script after the SET NX)")

	// Extend and Release go by digest, so only once the Server knows it.
	assert.False(t, startcall.Of(s).Start(ctx, call(startcall.CallRelease, "k", "t1"), newCompletion(true)), "release started before its script was loaded")
	_, err := s.Extend(ctx, "k", "t1", ttl)
	require.NoError(t, err)
	a = start(t, s, call(startcall.CallExtend, "k", "t2"))
	require.NoError(t, a.Err)
	assert.False(t, a.OK, "extend by another token")
	a = start(t, s, call(startcall.CallExtend, "k", "t1"))
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "extend by the holder")

	do(t, node, "SCRIPT", "FLUSH")
	_, err = s.Release(ctx, "other", "t1") // loads the release script (NOSCRIPT, then the source)
	require.NoError(t, err)
	do(t, node, "SCRIPT", "FLUSH")
	a = start(t, s, call(startcall.CallRelease, "k", "t1"))
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "released after NOSCRIPT, by the source")
	assert.Equal(t, int64(0), do(t, node, "EXISTS", "k"))

	c := call(startcall.CallAcquire, "k2", "t1")
	c.Incarnation = true
	a = start(t, s, c)
	require.NoError(t, a.Err)
	require.NoError(t, a.IncarnationErr)
	assert.True(t, a.OK)
	assert.NotEmpty(t, a.Incarnation.ID, "the incarnation, asked for")
}

// TestStartedSetAnswersAsTheBlockingMethods: a set's call (Call.Keys)
// started by digest gets AcquireAll's, ExtendAll's and ReleaseAll's
// answers, also after NOSCRIPT, with or without the lines made by the
// caller; a set too large to start is declined, for the blocking method.
func TestStartedSetAnswersAsTheBlockingMethods(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	ctx := context.Background()
	const ttl = time.Minute
	keys := []string{"{s}a", "{s}b", "{s}c"}
	call := func(op startcall.CallOp, token string) startcall.Call {
		return startcall.Call{Op: op, Key: "set", Keys: keys, Token: token, TTL: ttl}
	}
	assert.False(t, startcall.Of(s).Start(ctx, call(startcall.CallAcquireOrHolder, "t1"), newCompletion(true)), "started before its script was loaded")
	ok, _, err := s.AcquireAll(ctx, []string{"{s}x"}, "t0", ttl) // loads the script
	require.NoError(t, err)
	require.True(t, ok)

	a := start(t, s, call(startcall.CallAcquireOrHolder, "t1"))
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "a free set")
	a = start(t, s, call(startcall.CallAcquireOrHolder, "t2"))
	require.NoError(t, a.Err)
	assert.False(t, a.OK, "held by t1")
	assert.Greater(t, a.Holder.Left, time.Duration(0), "the refusal describes the holder")
	a = start(t, s, call(startcall.CallExtend, "t1"))
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "extended by the holder")

	_, err = s.ReleaseAll(ctx, []string{"{s}x"}, "t0") // loads the release script
	require.NoError(t, err)
	do(t, node, "SCRIPT", "FLUSH")
	c := call(startcall.CallRelease, "t1")
	a = start(t, s, c)
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "released after NOSCRIPT, by the source")
	assert.Equal(t, int64(0), do(t, node, "EXISTS", keys[0], keys[1], keys[2]))

	_, _, err = s.AcquireAll(ctx, keys, "t3", ttl)
	require.NoError(t, err)
	c = call(startcall.CallRelease, "t3")
	c.Lines = []string{"{s}a:line", "{s}b:line", "{s}c:line"}
	a = start(t, s, c)
	require.NoError(t, a.Err)
	assert.True(t, a.OK, "released with the caller's lines")

	big := call(startcall.CallAcquireOrHolder, "t4")
	big.Keys = []string{"{s}1", "{s}2", "{s}3", "{s}4", "{s}5", "{s}6", "{s}7", "{s}8", "{s}9", "{s}10", "{s}11", "{s}12", "{s}13", "{s}14", "{s}15", "{s}16", "{s}17"}
	assert.False(t, startcall.Of(s).Start(ctx, big, newCompletion(true)), "more words than a started command takes")
}

// TestStartedCallStopsWhenTold: a started acquire whose SET NX is refused
// sends its script only if the caller still wants it; told not to, it
// ends without an answer and without the script's effects.
func TestStartedCallStopsWhenTold(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	do(t, node, "SET", "k", "other") // refused: the first call, checked and set, goes on as after SET NX
	to := newCompletion(false)
	require.True(t, startcall.Of(s).Start(context.Background(), startcall.Call{Op: startcall.CallAcquireInLine, Key: "k", Token: "t", TTL: time.Minute,
		Deadline: time.Now().Add(time.Second)}, to))
	select {
	case <-to.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the refused call never asked whether to go on")
	}
	// A call made now runs after anything the started one sent; had its
	// script run, it would have put the caller in line.
	_, err := s.Release(context.Background(), "k", "t")
	require.NoError(t, err)
	select {
	case a := <-to.answers:
		t.Fatalf("answered %+v after being told to stop", a)
	default:
	}
	assert.Equal(t, int64(0), do(t, node, "EXISTS", layout.LineKey("k")), "the script ran")
}

// TestStartedCallsOfABrokenConnectionAreAnswered: calls started on a
// server that does not answer are answered when the connection breaks (the
// server closes it) and when the Server closes, and nothing is left
// running (goleak, at the end of the package's tests).
func TestStartedCallsOfABrokenConnectionAreAnswered(t *testing.T) {
	cluster := redistest.Start(t, 2)
	killed, closed := cluster.Nodes[0], cluster.Nodes[1]
	ks, cs := fromURL(t, killed.URL("")), fromURL(t, closed.URL(""))
	ctx := context.Background()
	for _, s := range []*redis.Server{ks, cs} {
		_, err := s.Acquire(ctx, "warm", "t", time.Minute) // connected
		require.NoError(t, err)
	}
	do(t, killed, "CLIENT", "PAUSE", "10000", "WRITE") // its SET NX waits in the server
	t.Cleanup(func() { do(t, killed, "CLIENT", "UNPAUSE") })
	closed.Pause()
	t.Cleanup(closed.Resume)
	c := startcall.Call{Op: startcall.CallAcquire, Key: "k", Token: "t", TTL: time.Minute, Deadline: time.Now().Add(time.Second)}
	toKilled, toClosed := newCompletion(true), newCompletion(true)
	require.True(t, startcall.Of(ks).Start(ctx, c, toKilled))
	require.True(t, startcall.Of(cs).Start(ctx, c, toClosed))

	require.Eventually(t, func() bool { // the SET NX has arrived, and waits
		list, _ := do(t, killed, "CLIENT", "LIST").([]byte)
		return strings.Contains(string(list), "flags=b")
	}, 10*time.Second, time.Millisecond)
	do(t, killed, "CLIENT", "KILL", "TYPE", "normal")
	a := toKilled.answer(t)
	assert.ErrorIs(t, a.Err, redis.ErrConnectionLost)
	require.NoError(t, cs.Close())
	a = toClosed.answer(t)
	assert.ErrorIs(t, a.Err, redis.ErrClosed)
	assert.False(t, startcall.Of(cs).Start(ctx, c, newCompletion(true)), "started on a closed Server")
}
