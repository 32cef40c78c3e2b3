package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// nodeCounters reads the nodes' own counters over connections of its own.
type nodeCounters struct {
	addrs []string
	conns []redigo.Conn
}

// counts are sums over the nodes.
type counts struct {
	commands    int64 // total_commands_processed: commands run inside Lua scripts count too
	connections int64 // total_connections_received
}

func openCounters(addrs []string) (*nodeCounters, error) {
	nc := &nodeCounters{addrs: addrs}
	for _, a := range addrs {
		c, err := dialCounter(a)
		if err != nil {
			nc.close()
			return nil, err
		}
		nc.conns = append(nc.conns, c)
	}
	return nc, nil
}

func dialCounter(addr string) (redigo.Conn, error) {
	c, err := redigo.Dial("tcp", addr, redigo.DialConnectTimeout(5*time.Second), redigo.DialReadTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("counters: %w", err)
	}
	return c, nil
}

// redial replaces the connection to addr, after its node was started
// again (a degraded state killed it).
func (nc *nodeCounters) redial(addr string) error {
	for i, a := range nc.addrs {
		if a != addr {
			continue
		}
		c, err := dialCounter(a)
		if err != nil {
			return err
		}
		nc.conns[i].Close()
		nc.conns[i] = c
	}
	return nil
}

// read sums the counters. A node counts each INFO after answering it, so
// the difference of two reads holds one INFO per node: see commandsBetween.
func (nc *nodeCounters) read() (counts, error) {
	var sum counts
	for _, c := range nc.conns {
		info, err := redigo.String(c.Do("INFO", "stats"))
		if err != nil {
			return counts{}, fmt.Errorf("counters: %w", err)
		}
		cmds, err1 := infoField(info, "total_commands_processed")
		conns, err2 := infoField(info, "total_connections_received")
		if err1 != nil || err2 != nil {
			return counts{}, fmt.Errorf("counters: %v %v", err1, err2)
		}
		sum.commands += cmds
		sum.connections += conns
	}
	return sum, nil
}

// commandsBetween is how many commands the nodes ran between two reads,
// not counting the first read's INFO.
func (nc *nodeCounters) commandsBetween(before, after counts) int64 {
	return after.commands - before.commands - int64(len(nc.conns))
}

func (nc *nodeCounters) close() {
	for _, c := range nc.conns {
		c.Close()
	}
}

// serverVersion is the first node's redis_version.
func (nc *nodeCounters) serverVersion() string {
	info, err := redigo.String(nc.conns[0].Do("INFO", "server"))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

func infoField(info, field string) (int64, error) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in INFO", field)
}
