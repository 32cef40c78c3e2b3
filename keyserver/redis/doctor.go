package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/goredlock/goredlock/internal/layout"
)

// The doctor (rule 18): what each server is, and what goredlock will do
// there, as redlock doctor prints it; see Diagnose.

// Diagnosis is what Diagnose found out about one server: what it is, as
// far as the server lets this user read it, and what goredlock will do
// there. The strings are for people; no Problems is the verdict that
// goredlock can count the server's votes safely.
type Diagnosis struct {
	// Server is the Server's name (its host and port for FromURL).
	Server string `json:"server"`
	// Engine and Version are INFO's server_name ("valkey"; "redis" when
	// it has none) and version; empty where INFO is denied.
	Engine  string `json:"engine,omitempty"`
	Version string `json:"version,omitempty"`
	// Role is "master", "replica" or another role INFO reports; "master"
	// too where INFO is denied but the server took the store's marker.
	Role string `json:"role,omitempty"`
	// Cluster reports a server in Redis Cluster mode.
	Cluster bool `json:"cluster"`
	// Persistence and Eviction say what the server keeps across a restart
	// and whether it evicts keys under memory pressure, or why they are
	// unknown.
	Persistence string `json:"persistence,omitempty"`
	Eviction    string `json:"eviction,omitempty"`
	// Store is the ID of the store's marker (layout.IncarnationKey): two
	// servers with one ID are one store.
	Store string `json:"store,omitempty"`
	// Features says, per feature, whether it works there.
	Features []Feature `json:"features,omitempty"`
	// Problems are what make the server unusable or unsafe as a key
	// server: unreachable, a replica, a policy that can evict lock keys,
	// one store named twice, locks refused. None for a usable server.
	Problems []string `json:"problems,omitempty"`
	// Warnings are what could not be told, or what to check by hand.
	Warnings []string `json:"warnings,omitempty"`
}

// Feature is how one feature fares on a server.
type Feature struct {
	// Name is the feature: "locks" (every kind of hold), "wake-ups",
	// "script digests", "restart detection" or "durability".
	Name string `json:"name"`
	// Support is "works", "degraded" (it works, worse: Detail says how)
	// or "refused" (Detail says what would allow it).
	Support string `json:"support"`
	Detail  string `json:"detail,omitempty"`
}

// The values of Feature.Support.
const (
	works    = "works"
	degraded = "degraded"
	refused  = "refused"
)

// Diagnose asks each server, at once, what it is and what it allows this
// user, and returns one Diagnosis per server in the order given: the
// checks of redlock doctor, for a program to run at start-up. It writes
// nothing but the store's marker, as a client's first call does (and, for
// "script digests", loads a one-line script). ctx bounds it all; a server
// that does not answer in time is unusable.
func Diagnose(ctx context.Context, servers ...*Server) []Diagnosis {
	out := make([]Diagnosis, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = s.diagnose(ctx)
		}()
	}
	wg.Wait()
	byStore := map[string][]int{}
	for i, d := range out {
		if d.Store != "" {
			byStore[d.Store] = append(byStore[d.Store], i)
		}
	}
	for _, same := range byStore {
		if len(same) < 2 {
			continue
		}
		names := make([]string, len(same))
		for j, i := range same {
			names[j] = out[i].Server
		}
		for _, i := range same {
			out[i].Problems = append(out[i].Problems, fmt.Sprintf(
				"one store named %d times (%s): its votes would count more than once", len(same), strings.Join(names, ", ")))
		}
	}
	return out
}

// diagnose is Diagnose of one server.
func (s *Server) diagnose(ctx context.Context) Diagnosis {
	if s == nil {
		return Diagnosis{Problems: []string{"a nil *Server"}}
	}
	d := Diagnosis{Server: s.String()}
	if err := s.enter(ctx, "doctor", ""); err != nil {
		d.Problems = append(d.Problems, err.Error())
		return d
	}
	defer s.inflight.Done()
	// The store's marker first: the first command of any client, and the
	// one that tells an unreachable server, a refused password or a
	// replica (READONLY).
	id, _, markerErr := s.marker(ctx)
	if markerErr != nil && !errors.Is(markerErr, errReplica) {
		msg := d.trim(markerErr)
		_, isReply := s.t.ReplyText(markerErr)
		if !isReply || strings.Contains(msg, "authentication failed") {
			if !strings.Contains(msg, "authentication failed") {
				msg = "unreachable: " + msg
			}
			d.Problems = append(d.Problems, msg)
			return d
		}
	}
	info, infoErr := s.infoFields(ctx)
	d.readInfo(info)
	switch {
	case errors.Is(markerErr, errReplica): // the role switch below says so
		if d.Role == "" {
			d.Role = "replica"
		}
	case markerErr != nil:
		d.Problems = append(d.Problems, "the store's marker: "+d.trim(markerErr))
	default:
		d.Store = id
		if d.Role == "" {
			d.Role = "master"
		}
	}
	switch d.Role {
	case "slave", "replica":
		d.Role = "replica"
		d.Problems = append(d.Problems, "a replica: its grants would be lost in a failover, or never replicated back; give its master")
	case "active-replica":
		d.Problems = append(d.Problems, "an active replica (KeyDB multi-master): two masters of one data set can each grant a lock")
	}
	if d.Cluster {
		d.Warnings = append(d.Warnings, "a Redis Cluster node: a URL reaches the keys of its own slots only; give a Cluster client (keyserver/goredis) unless it serves every slot")
	}
	config := s.configFields(ctx, "appendonly", "appendfsync", "save", "maxmemory-policy", "maxmemory")
	d.readPersistence(info, config)
	d.readEviction(info, config)

	if d.Role == "replica" {
		d.Features = append(d.Features, Feature{Name: "locks", Support: refused, Detail: "a replica refuses every write (READONLY): give its master"})
	} else {
		d.Features = append(d.Features, s.diagnoseLocks(ctx, &d))
	}
	d.Features = append(d.Features, s.diagnoseWakeUps(ctx))
	d.Features = append(d.Features, s.diagnoseDigests(ctx))
	restart := Feature{Name: "restart detection", Support: works, Detail: "the store's marker and INFO's run id"}
	if infoErr != nil {
		restart = Feature{Name: "restart detection", Support: degraded, Detail: "the store's marker alone: a restart that reloads a snapshot holding the marker is not told; " +
			because(infoErr, "the ACL rule +info")}
	}
	if d.Store == "" && d.Role != "replica" {
		restart = Feature{Name: "restart detection", Support: refused, Detail: "the store's marker could not be read; to allow it: ~" + layout.IncarnationKey + " and +set +get +pttl"}
	}
	d.Features = append(d.Features, restart)
	durability := Feature{Name: "durability", Support: works, Detail: "read from CONFIG"}
	switch {
	case config == nil:
		durability = Feature{Name: "durability", Support: degraded, Detail: "CONFIG GET is denied: the server counts as not durable, quarantined for a TTL after each restart; to allow it: the ACL rule +config|get"}
	case config["appendonly"] == "yes" && config["appendfsync"] == "always":
		durability.Detail = "every write fsynced: a restart is never quarantined"
	default:
		durability.Detail = "not every write fsynced: a restart quarantines the server for a TTL"
	}
	d.Features = append(d.Features, durability)
	return d
}

// infoFields reads INFO's default sections, field by field: nil and the
// refusal where an ACL denies INFO or the server lacks it.
func (s *Server) infoFields(ctx context.Context) (map[string]string, error) {
	reply, err := s.t.Do(ctx, []string{"INFO"}, nil)
	if err != nil {
		return nil, s.refusal("", err)
	}
	text, _ := reply.(string)
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	return fields, nil
}

// configFields reads params with CONFIG GET, one at a time where the
// server takes one only (Redis 6): nil where CONFIG is denied.
func (s *Server) configFields(ctx context.Context, params ...string) map[string]string {
	out := map[string]string{}
	reply, err := s.t.Do(ctx, []string{"CONFIG", "GET"}, nil, params...)
	if err == nil {
		for _, p := range params {
			if v, ok := configValue(reply, p); ok {
				out[p] = v
			}
		}
		return out
	}
	if _, isReply := s.t.ReplyText(err); !isReply {
		return nil
	}
	for _, p := range params {
		reply, err := s.t.Do(ctx, []string{"CONFIG", "GET"}, nil, p)
		if err != nil {
			return nil
		}
		if v, ok := configValue(reply, p); ok {
			out[p] = v
		}
	}
	return out
}

// trim is err's message without the server's name and the operation,
// which a diagnosis says already.
func (d *Diagnosis) trim(err error) string {
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), d.Server+": "), "incarnation: ")
}

// readInfo takes what INFO says the server is.
func (d *Diagnosis) readInfo(info map[string]string) {
	if info == nil {
		d.Warnings = append(d.Warnings, "INFO is denied: engine, version and role unknown (the ACL rule +info tells them)")
		return
	}
	d.Engine, d.Version = "redis", info["redis_version"]
	if name := info["server_name"]; name != "" {
		d.Engine = name
		if v := info[name+"_version"]; v != "" {
			d.Version = v
		}
	}
	d.Role = info["role"]
	d.Cluster = info["cluster_enabled"] == "1"
}

// readPersistence says what the server keeps across a restart.
func (d *Diagnosis) readPersistence(info, config map[string]string) {
	switch {
	case config != nil:
		var parts []string
		switch {
		case config["appendonly"] == "yes":
			parts = append(parts, "AOF, appendfsync "+config["appendfsync"])
		default:
			parts = append(parts, "no AOF")
		}
		if save := config["save"]; save != "" {
			parts = append(parts, "RDB snapshots (save "+save+")")
		} else {
			parts = append(parts, "no RDB snapshots")
		}
		d.Persistence = strings.Join(parts, ", ")
	case info != nil && info["aof_enabled"] == "1":
		d.Persistence = "AOF, appendfsync unknown (CONFIG GET denied)"
	case info != nil:
		d.Persistence = "no AOF; snapshots unknown (CONFIG GET denied)"
	default:
		d.Persistence = "unknown (INFO and CONFIG GET denied)"
	}
}

// readEviction says whether the server can evict lock keys: a problem for
// an allkeys-* policy, and for a volatile-* one (lock keys have a TTL)
// with maxmemory set.
func (d *Diagnosis) readEviction(info, config map[string]string) {
	policy, maxmem := "", ""
	switch {
	case info != nil && info["maxmemory_policy"] != "":
		policy, maxmem = info["maxmemory_policy"], info["maxmemory"]
	case config != nil:
		policy, maxmem = config["maxmemory-policy"], config["maxmemory"]
	}
	if policy == "" {
		d.Eviction = "unknown"
		d.Warnings = append(d.Warnings, "the eviction policy is unknown (INFO and CONFIG GET denied): make sure it is noeviction, or volatile-* without maxmemory")
		return
	}
	d.Eviction = policy
	if maxmem != "" && maxmem != "0" {
		d.Eviction += ", maxmemory " + maxmem
	}
	switch {
	case strings.HasPrefix(policy, "allkeys-"):
		d.Problems = append(d.Problems, "maxmemory-policy "+policy+" can evict lock keys, freeing a held lock: set noeviction")
	case strings.HasPrefix(policy, "volatile-") && maxmem != "" && maxmem != "0":
		d.Problems = append(d.Problems, "maxmemory-policy "+policy+" with maxmemory "+maxmem+" can evict lock keys (they have a TTL), freeing a held lock: set noeviction")
	}
}

// diagnoseLocks runs the scripting check of the Server's first write.
func (s *Server) diagnoseLocks(ctx context.Context, d *Diagnosis) Feature {
	f := Feature{Name: "locks", Support: works, Detail: "locks, fences, sets of names, semaphores, read-write locks and elections"}
	r, err := s.askScripting(ctx)
	switch {
	case err != nil:
		f.Support, f.Detail = refused, "the check failed: "+err.Error()
		d.Problems = append(d.Problems, "locks: "+f.Detail)
	case r != nil:
		f.Support, f.Detail = refused, r.Error()
		d.Problems = append(d.Problems, "locks refused: "+r.Error())
	}
	return f
}

// diagnoseWakeUps subscribes to a channel of the wake-ups' and publishes
// on another, as waiters and releases do.
func (s *Server) diagnoseWakeUps(ctx context.Context) Feature {
	f := Feature{Name: "wake-ups", Support: works, Detail: "a waiter is woken when the lock is freed (Pub/Sub)"}
	poll := func(err error) Feature {
		f.Support = degraded
		f.Detail = "waiters poll instead of being woken: " + because(err, "the ACL rules +subscribe +unsubscribe +publish &goredlock:*")
		return f
	}
	var id [8]byte
	rand.Read(id[:]) //nolint:errcheck // never fails (crypto/rand)
	channel := "goredlock:turns:doctor-" + hex.EncodeToString(id[:])
	if _, err := s.t.Do(ctx, []string{"PUBLISH"}, nil, channel, ""); err != nil {
		return poll(s.refusal("", err))
	}
	h := &probeHandler{done: make(chan error, 1)}
	ps, err := s.t.PubSub(ctx, h)
	if err != nil {
		return poll(err)
	}
	defer ps.Close()
	if err := ps.Subscribe(ctx, channel); err != nil {
		return poll(err)
	}
	select {
	case err := <-h.done:
		if err != nil {
			return poll(s.refusal("", err))
		}
	case <-ctx.Done():
		return poll(fmt.Errorf("SUBSCRIBE unconfirmed: %w", ctx.Err()))
	}
	return f
}

// because says why a feature is degraded: err, which names what allows
// it when it is a refusal, or err and rule.
func because(err error, rule string) string {
	var r *RefusedError
	if errors.As(err, &r) {
		return err.Error()
	}
	return err.Error() + "; to allow it: " + rule
}

// probeHandler hears the confirmation of diagnoseWakeUps' SUBSCRIBE.
type probeHandler struct {
	once sync.Once
	done chan error // nil: subscribed
}

func (h *probeHandler) Message(string, string) {}
func (h *probeHandler) Subscribed(string)      { h.once.Do(func() { h.done <- nil }) }
func (h *probeHandler) Unsubscribed(string)    {}
func (h *probeHandler) Broken(err error) {
	if err == nil {
		err = errors.New("the connection broke")
	}
	h.once.Do(func() { h.done <- err })
}

// diagnoseDigests loads a one-line script and runs it by its digest, as
// the Server runs each of its scripts after its first run.
func (s *Server) diagnoseDigests(ctx context.Context) Feature {
	f := Feature{Name: "script digests", Support: works, Detail: "scripts run by digest (SCRIPT LOAD, EVALSHA)"}
	reply, err := s.t.Do(ctx, []string{"SCRIPT", "LOAD"}, nil, "return 1")
	if err == nil {
		digest, _ := reply.(string)
		_, err = s.t.Do(ctx, []string{"EVALSHA", digest, "0"}, nil)
	}
	if err != nil {
		f.Support = degraded
		f.Detail = "every script is sent by its source: " + because(s.refusal("", err), "the ACL rules +script|load +evalsha")
	}
	return f
}
