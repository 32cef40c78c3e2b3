package redigotransport

import (
	"bytes"
	"net"
	"testing"

	redigo "github.com/gomodule/redigo/redis"
)

// writeConn is a net.Conn whose writes go to a buffer; its other methods
// are never called here.
type writeConn struct {
	net.Conn
	wrote bytes.Buffer
}

func (c *writeConn) Write(b []byte) (int, error) { return c.wrote.Write(b) }

// TestWireWritesWhatRedigoWould: a batch written by the pipeline's own
// encoder is byte for byte what redigo's Send and Flush write, for words
// empty, binary or holding the protocol's own markers.
func TestWireWritesWhatRedigoWould(t *testing.T) {
	commands := [][]string{
		{"SET", "k", "0000019a1b2c3d4e.1234abcd00112233445566778899aabb", "NX", "PX", "10000"},
		{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff831", "2", "{k}:x", "k", "", "\r\n$3\r\n*1\x00é"},
		{"PING"},
	}
	var batch []*call
	redigoWrote := &writeConn{}
	rc := redigo.NewConn(redigoWrote, 0, 0)
	for _, words := range commands {
		c, ok := newCall(words[:1], nil, words[1:])
		if !ok {
			t.Fatalf("newCall(%q) refused", words)
		}
		batch = append(batch, c)
		args := make([]any, len(words)-1)
		for i, w := range words[1:] {
			args[i] = w
		}
		if err := rc.Send(words[0], args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.Flush(); err != nil {
		t.Fatal(err)
	}
	wireWrote := &writeConn{}
	w := &wire{nc: wireWrote}
	for round := 0; round < 2; round++ { // the second reuses the buffer
		wireWrote.wrote.Reset()
		if err := w.flush(w.encode(batch)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(wireWrote.wrote.Bytes(), redigoWrote.wrote.Bytes()) {
			t.Fatalf("round %d: wrote\n%q\nredigo writes\n%q", round, wireWrote.wrote.Bytes(), redigoWrote.wrote.Bytes())
		}
	}
}
