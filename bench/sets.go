package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/goredlock/goredlock/redlock"
)

// setSize is the number of names in each grant of the set workload and
// of the set peers: a goroutine's key k stands for the names k:0 ... k:3.
const setSize = 4

// setNames returns the names of the set that key stands for, sorted.
func setNames(key string) []string {
	names := make([]string, setSize)
	for i := range names {
		names[i] = fmt.Sprintf("%s:%d", key, i)
	}
	slices.Sort(names)
	return names
}

// setPeers take a set of setSize names per grant: all at once with
// AcquireAll, or one by one with Acquire in sorted order (the way to take
// several locks without AcquireAll that cannot deadlock), in the same run.
func setPeers() []peer {
	skip := func(_ int, w workload) string {
		if w.names != setSize {
			return fmt.Sprintf("takes a set of %d names", setSize)
		}
		return ""
	}
	open := func(take func(*redlock.Client, context.Context, []string, settings) (func(context.Context) error, error)) func([]string, settings) (locker, error) {
		return func(addrs []string, s settings) (locker, error) {
			l, err := openGoredlock(addrs, s, fromURL)
			if err != nil {
				return nil, err
			}
			return setLocker{l.(*goredlock), take}, nil
		}
	}
	return []peer{{
		name:  "goredlock-set",
		title: func(settings) string { return fmt.Sprintf("goredlock AcquireAll of %d names", setSize) },
		about: fmt.Sprintf("redlock.New over keyserver/redis.FromURL servers, default options; each grant is a set of %d names taken by Client.AcquireAll, released by one Release.", setSize),
		extra: true,
		sets:  true,
		skip:  skip,
		open:  open(acquireAll),
	}, {
		name:  "goredlock-set-one-by-one",
		title: func(settings) string { return fmt.Sprintf("goredlock Acquire of %d names one by one", setSize) },
		about: fmt.Sprintf("goredlock as above; each grant is %d locks taken by Client.Acquire one after the other in sorted order, released one by one.", setSize),
		extra: true,
		sets:  true,
		skip:  skip,
		open:  open(acquireOneByOne),
	}}
}

// setLocker is a goredlock locker whose grants are sets of names.
type setLocker struct {
	*goredlock
	take func(*redlock.Client, context.Context, []string, settings) (func(context.Context) error, error)
}

func (l setLocker) lock(ctx context.Context, key string) (func(context.Context) error, error) {
	return l.take(l.client, ctx, setNames(key), l.s)
}

// acquireAll takes every name in one AcquireAll.
func acquireAll(c *redlock.Client, ctx context.Context, names []string, s settings) (func(context.Context) error, error) {
	l, err := c.AcquireAll(ctx, names, s.ttl)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// acquireOneByOne takes the names with one Acquire each, in order, and
// lets go of those it took if one fails.
func acquireOneByOne(c *redlock.Client, ctx context.Context, names []string, s settings) (func(context.Context) error, error) {
	held := make([]*redlock.Lock, 0, len(names))
	release := func(ctx context.Context) error {
		var errs []error
		for i := len(held) - 1; i >= 0; i-- {
			errs = append(errs, held[i].Release(ctx))
		}
		return errors.Join(errs...)
	}
	for _, n := range names {
		l, err := c.Acquire(ctx, n, s.ttl)
		if err != nil {
			_ = release(context.WithoutCancel(ctx))
			return nil, err
		}
		held = append(held, l)
	}
	return release, nil
}
