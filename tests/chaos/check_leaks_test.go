package chaos

import (
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/redistest"
)

func onlyKind(t *testing.T, vs []Violation, k Kind, n int) {
	t.Helper()
	if len(vs) != n {
		t.Fatalf("%d violations, want %d %s: %v", len(vs), n, k, vs)
	}
	for _, v := range vs {
		if v.Kind != k {
			t.Fatalf("violation %v, want a %s", v, k)
		}
	}
}

func leakyGoroutine(stop <-chan struct{}) { <-stop }

func TestGoroutineLeakFound(t *testing.T) {
	b := takeGoroutineBaseline()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		leakyGoroutine(stop)
	}()
	vs := b.check(50 * time.Millisecond)
	onlyKind(t, vs, GoroutineLeak, 1)
	if !strings.Contains(vs[0].Detail, "leakyGoroutine") {
		t.Fatalf("the report does not show the leaked goroutine: %s", vs[0].Detail)
	}
	close(stop)
	<-done
	onlyKind(t, b.check(time.Second), GoroutineLeak, 0)
}

func TestConnLeakFound(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	addrs := []string{node.Addr()}
	onlyKind(t, checkConns(addrs, nil, 0), ConnLeak, 0)

	conn, err := redigo.Dial("tcp", node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	onlyKind(t, checkConns(addrs, nil, 50*time.Millisecond), ConnLeak, 1)
	conn.Close()
	onlyKind(t, checkConns(addrs, nil, 2*time.Second), ConnLeak, 0)

	// Through a proxy, an open connection shows on the proxy and the node.
	p := startProxy(t, node.Addr())
	pconn, err := redigo.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pconn.Do("PING"); err != nil {
		t.Fatal(err)
	}
	onlyKind(t, checkConns(addrs, []*Proxy{p}, 50*time.Millisecond), ConnLeak, 2)
	pconn.Close()
	onlyKind(t, checkConns(addrs, []*Proxy{p}, 2*time.Second), ConnLeak, 0)
}

func TestKeyLeakFound(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	addrs := []string{node.Addr()}
	conn, err := redigo.Dial("tcp", node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	onlyKind(t, checkKeys(addrs, time.Now()), KeyLeak, 0)

	if _, err := conn.Do("SET", "expired", "token", "PX", 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	onlyKind(t, checkKeys(addrs, time.Now()), KeyLeak, 0) // expired, evicted or not

	// A key that expires by the time given is not left; one that outlives
	// it is, however soon it expires after.
	if _, err := conn.Do("SET", "expiring", "token", "PX", 500); err != nil {
		t.Fatal(err)
	}
	onlyKind(t, checkKeys(addrs, time.Now().Add(time.Second)), KeyLeak, 0)
	onlyKind(t, checkKeys(addrs, time.Now().Add(100*time.Millisecond)), KeyLeak, 1)
	if _, err := conn.Do("DEL", "expiring"); err != nil {
		t.Fatal(err)
	}

	if _, err := conn.Do("SET", "left", "secret-token"); err != nil {
		t.Fatal(err)
	}
	vs := checkKeys(addrs, time.Now().Add(time.Hour))
	onlyKind(t, vs, KeyLeak, 1)
	if !strings.Contains(vs[0].Detail, `"left"`) || strings.Contains(vs[0].Detail, "secret") {
		t.Fatalf("the report should name the key and not its value: %s", vs[0].Detail)
	}
}
