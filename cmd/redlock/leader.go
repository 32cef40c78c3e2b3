package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/goredlock/goredlock/redlock"
)

// leader is redlock leader: the value of the election NAME's leader, as a
// quorum of the servers agree on it. It writes nothing to the servers.
func (t *tool) leader(args []string) error {
	cfg, err := parseStatus("leader", args, t.getenv)
	if err != nil {
		return err
	}
	client, done, err := t.readClient(cfg.servers)
	if err != nil {
		return err
	}
	defer done()

	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	value, err := client.Election(cfg.name).Leader(ctx)
	switch {
	case err == nil:
		fmt.Fprintln(t.stdout, value)
		return nil
	case errors.Is(err, redlock.ErrNoLeader):
		return failf(exitNoLeader, "no leader of %q", cfg.name)
	case errors.Is(err, redlock.ErrInvalidArgument):
		return badf("%v", err)
	}
	return &exitError{code: exitUnavailable, msg: err.Error()}
}
