package miniredis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/redlock"
)

func TestLockAcquireExtendRelease(t *testing.T) {
	mrs := start(t, 3)
	c := clientOn(t, mrs, redlock.WithRetryCount(0))
	l, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	eventuallyAll(t, mrs, "job", l.Token(), "after Acquire")
	for i, mr := range mrs {
		assert.LessOrEqual(t, mr.TTL("job"), 10*time.Second, "server %d", i)
	}
	require.NoError(t, l.Extend(bg, time.Minute))
	require.Eventually(t, func() bool {
		for _, mr := range mrs {
			if mr.TTL("job") <= 10*time.Second {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "Extend to a minute reached every server")
	require.NoError(t, l.Release(bg))
	eventuallyAll(t, mrs, "job", "", "after Release")
}
