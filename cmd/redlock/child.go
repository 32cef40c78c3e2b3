package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

// hold runs COMMAND while keeping the lock alive, then releases the lock,
// and returns the exit status: COMMAND's, or 70 if the lock was lost.
func (t *tool) hold(cfg *runConfig, lock *redlock.Lock, path string, sigs <-chan os.Signal) error {
	kctx, stopKeepAlive := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The client logs why extensions fail; a loss closes lock.Done.
		_ = lock.KeepAlive(kctx)
	}()

	status, lost := t.supervise(cfg, lock, path, sigs)

	stopKeepAlive()
	wg.Wait()
	err := lock.Release(context.Background())
	var qe *redlock.QuorumError
	switch {
	case lost:
		return &exitError{code: exitLost}
	case errors.Is(err, redlock.ErrNotHeld) && errors.As(err, &qe):
		// A quorum no longer held this token when COMMAND ended: another
		// holder took the lock, or restarted servers lost the key. Either
		// way COMMAND may not have run alone, though the lock was never
		// declared lost here.
		t.say(err.Error())
		return &exitError{code: exitLost}
	case err != nil && !errors.Is(err, redlock.ErrNotHeld):
		// Too few servers answered; the keys they keep expire with the TTL.
		t.say(err.Error())
	}
	return status
}

// supervise starts COMMAND and waits for it to end, passing signals on and
// ending it if the lock is lost. It reports COMMAND's exit status and
// whether the lock was lost before COMMAND ended.
func (t *tool) supervise(cfg *runConfig, lock *redlock.Lock, path string, sigs <-chan os.Signal) (status error, lost bool) {
	cmd := &exec.Cmd{
		Path:        path,
		Args:        cfg.command,
		Env:         childEnv(t.environ(), lock, cfg.fence),
		Stdin:       t.stdin,
		Stdout:      t.stdout,
		Stderr:      t.stderr,
		SysProcAttr: childAttrs(),
	}
	if err := cmd.Start(); err != nil {
		return failf(exitCannotExec, "cannot execute COMMAND: %v", err), false
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = cmd.Wait() // ProcessState says how COMMAND ended
	}() // supervise returns only once it has

	var (
		loss  = lock.Done() // nothing releases the lock before COMMAND ends: closed only when lost
		kill  <-chan time.Time
		timer *time.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig) // fails only once COMMAND has ended
		case <-loss:
			loss, lost = nil, true
			t.sayf("%s lost; sending SIGTERM to COMMAND, SIGKILL in %v", cfg.held(), cfg.grace)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			timer = time.NewTimer(cfg.grace)
			kill = timer.C
		case <-kill:
			kill = nil
			t.sayf("COMMAND still running %v after SIGTERM; sending SIGKILL", cfg.grace)
			_ = cmd.Process.Kill()
		case <-exited:
			if !lost && errors.Is(lock.Err(), redlock.ErrLockLost) {
				lost = true
				t.sayf("%s before COMMAND ended", cfg.wasLost())
			}
			return &exitError{code: exitStatus(cmd.ProcessState)}, lost
		}
	}
}

// exitStatus is the status a shell would report for COMMAND: its exit
// code, or 128+N when signal N ended it.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return exitCannotExec // never: Wait follows a successful Start
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignal + int(ws.Signal())
	}
	return ps.ExitCode()
}

// childEnv is redlock's environment for COMMAND, with the lock's name,
// token and, under --fence, fencing token in place of any inherited from
// an enclosing redlock run. With --also the name is every name joined by
// commas (as Lock.Name gives it), and the fencing token each name's, in
// that order, joined by commas.
func childEnv(env []string, lock *redlock.Lock, fence bool) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "REDLOCK_NAME", "REDLOCK_TOKEN", "REDLOCK_FENCE":
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "REDLOCK_NAME="+lock.Name(), "REDLOCK_TOKEN="+lock.Token())
	if fence {
		fences := make([]string, 0, 1)
		for _, n := range lock.Names() {
			fences = append(fences, strconv.FormatUint(lock.FenceOf(n), 10))
		}
		out = append(out, "REDLOCK_FENCE="+strings.Join(fences, ","))
	}
	return out
}
