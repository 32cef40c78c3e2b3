package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/goredlock/goredlock/keyserver/redis"
)

// doctorTimeout bounds redlock doctor: every server is asked at once.
const doctorTimeout = 5 * time.Second

// exitUnsafe is redlock doctor's status when a server is unusable or
// unsafe as a key server.
const exitUnsafe = 1

// doctor is redlock doctor: per server, what it is and what goredlock
// will do there (redis.Diagnose), printed; exit status 1 when one is
// unusable or unsafe.
func (t *tool) doctor(args []string) error {
	cfg, err := parseDoctor(args, t.getenv)
	if err != nil {
		return err
	}
	srv, err := openServers(cfg.servers)
	if err != nil {
		return err
	}
	defer srv.close()
	ctx, cancel := context.WithTimeout(context.Background(), doctorTimeout)
	defer cancel()
	ds := redis.Diagnose(ctx, srv.list...)
	var bad []string
	for _, d := range ds {
		if len(d.Problems) > 0 {
			bad = append(bad, d.Server)
		}
	}
	if cfg.json {
		b, err := json.Marshal(jsonDoctor{Usable: len(bad) == 0, Servers: ds})
		if err != nil {
			return err
		}
		fmt.Fprintf(t.stdout, "%s\n", b)
	} else {
		for _, d := range ds {
			t.printDiagnosis(d)
		}
		if len(bad) == 0 {
			fmt.Fprintf(t.stdout, "verdict: all %d servers usable\n", len(ds))
		} else {
			fmt.Fprintf(t.stdout, "verdict: %d of %d servers unusable or unsafe: %s\n", len(bad), len(ds), strings.Join(bad, ", "))
		}
	}
	if len(bad) > 0 {
		return failf(exitUnsafe, "%d of %d servers unusable or unsafe: %s", len(bad), len(ds), strings.Join(bad, ", "))
	}
	return nil
}

// jsonDoctor is the JSON of redlock doctor --json (documented in the
// manual).
type jsonDoctor struct {
	Usable  bool              `json:"usable"`
	Servers []redis.Diagnosis `json:"servers"`
}

// printDiagnosis prints a server's diagnosis: a line of what it is, then
// one indented line per feature, problem and warning.
func (t *tool) printDiagnosis(d redis.Diagnosis) {
	verdict := "usable"
	if len(d.Problems) > 0 {
		verdict = "UNUSABLE"
	}
	var what []string
	if d.Engine != "" {
		what = append(what, d.Engine+" "+d.Version)
	}
	if d.Role != "" {
		what = append(what, d.Role)
	}
	if d.Cluster {
		what = append(what, "cluster mode")
	}
	if d.Persistence != "" {
		what = append(what, "persistence: "+d.Persistence)
	}
	if d.Eviction != "" {
		what = append(what, "eviction: "+d.Eviction)
	}
	line := d.Server + ": " + verdict
	if len(what) > 0 {
		line += " (" + strings.Join(what, "; ") + ")"
	}
	fmt.Fprintln(t.stdout, line)
	for _, p := range d.Problems {
		fmt.Fprintln(t.stdout, "  problem: "+oneLine(p))
	}
	for _, f := range d.Features {
		l := "  " + f.Name + ": " + f.Support
		if f.Support != "works" && f.Detail != "" {
			l += ": " + f.Detail
		}
		fmt.Fprintln(t.stdout, oneLine(l))
	}
	for _, w := range d.Warnings {
		fmt.Fprintln(t.stdout, "  warning: "+oneLine(w))
	}
}
