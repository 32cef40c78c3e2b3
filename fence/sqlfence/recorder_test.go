package sqlfence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/goredlock/goredlock/fence/sqlfence"
)

// recorder is a database/sql driver that runs nothing: it records each
// statement with its arguments, and answers every query with one row
// holding the fence of the last statement's arguments.
type recorder struct {
	mu    sync.Mutex
	stmts []string
	last  int64
}

var rec = &recorder{}

func init() { sql.Register("sqlfence-recorder", rec) }

// recordStatements returns the statements g.Check runs for resource and
// fence, each followed by its arguments.
func recordStatements(t *testing.T, g *sqlfence.Guard, resource string, fence uint64) []string {
	t.Helper()
	rec.mu.Lock()
	rec.stmts = nil
	rec.mu.Unlock()
	db, err := sql.Open("sqlfence-recorder", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // nothing ran
	if err := g.Check(ctx, tx, resource, fence); err != nil {
		t.Fatalf("Check: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.stmts...)
}

func (r *recorder) Open(string) (driver.Conn, error) { return recConn{r}, nil }

type recConn struct{ r *recorder }

func (c recConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c recConn) Close() error                        { return nil }
func (c recConn) Begin() (driver.Tx, error)           { return recTx{}, nil }

func (c recConn) record(query string, args []driver.NamedValue) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	s := query + " ["
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprint(a.Value)
		if f, ok := a.Value.(int64); ok {
			c.r.last = f
		}
	}
	c.r.stmts = append(c.r.stmts, s+"]")
}

func (c recConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.record(query, args)
	return driver.RowsAffected(1), nil
}

func (c recConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.record(query, args)
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return &recRows{fence: c.r.last}, nil
}

type recTx struct{}

func (recTx) Commit() error   { return nil }
func (recTx) Rollback() error { return nil }

type recRows struct {
	fence int64
	done  bool
}

func (r *recRows) Columns() []string { return []string{"fence"} }
func (r *recRows) Close() error      { return nil }
func (r *recRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = r.fence
	return nil
}
