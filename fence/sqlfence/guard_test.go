package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/goredlock/goredlock/fence/sqlfence"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopPostgres()
	stopMariaDB()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// backend is a real database of one dialect, fresh for each test, with
// the fence table and a data table:
//
//	data (id TEXT PRIMARY KEY, value TEXT, fence BIGINT, writes INT)
//	journal (seq, fence): one row per committed guarded write, in commit order
type backend struct {
	name    string
	dialect sqlfence.Dialect
	open    func(t *testing.T) *sql.DB
	journal string // the journal table's statement
	idType  string // the data table's key type
}

var backends = []backend{
	{name: "SQLite", dialect: sqlfence.SQLite, open: sqliteDB, idType: "TEXT",
		journal: "CREATE TABLE journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, fence BIGINT NOT NULL)"},
	{name: "Postgres", dialect: sqlfence.Postgres, open: postgresDB, idType: "TEXT",
		journal: "CREATE TABLE journal (seq BIGSERIAL PRIMARY KEY, fence BIGINT NOT NULL)"},
	{name: "MariaDB", dialect: sqlfence.MySQL, open: mariaDB, idType: "VARCHAR(64)",
		journal: "CREATE TABLE journal (seq BIGINT AUTO_INCREMENT PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=InnoDB"},
}

// sqliteDB opens a SQLite database in a file of the test's temporary
// directory: several connections, each waiting up to 10s for the write
// lock.
func sqliteDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// env is one test's database and guard.
type env struct {
	t  *testing.T
	b  backend
	db *sql.DB
	g  *sqlfence.Guard
}

func setup(t *testing.T, b backend) *env {
	t.Helper()
	db := b.open(t)
	g, err := sqlfence.New(b.dialect, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE data (id " + b.idType + " PRIMARY KEY, value TEXT NOT NULL, fence BIGINT NOT NULL, writes INT NOT NULL)",
		"INSERT INTO data (id, value, fence, writes) VALUES ('invoice-42', 'initial', 0, 0)",
		b.journal,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return &env{t: t, b: b, db: db, g: g}
}

// q adapts a query written with $1 placeholders: SQLite numbers them ?1,
// MySQL has ? only (in the order of the arguments).
func (e *env) q(query string) string {
	switch e.b.dialect {
	case sqlfence.SQLite:
		return strings.ReplaceAll(query, "$", "?")
	case sqlfence.MySQL:
		return placeholder.ReplaceAllString(query, "?")
	}
	return query
}

var placeholder = regexp.MustCompile(`\$[0-9]+`)

// write is a holder's guarded write to invoice-42: its value, its fence,
// one more write, and a journal row.
func (e *env) write(ctx context.Context, fence uint64, value string) error {
	return e.g.Do(ctx, e.db, "invoice-42", fence, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, e.q("UPDATE data SET value = $1, fence = $2, writes = writes + 1 WHERE id = 'invoice-42'"), value, int64(fence)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, e.q("INSERT INTO journal (fence) VALUES ($1)"), int64(fence))
		return err
	})
}

type row struct {
	value         string
	fence, writes int64
	recorded      int64 // the fence table's fence for invoice-42; 0 for none
	journal       []int64
}

// state reads the data row, the fence recorded and the journal.
func (e *env) state() row {
	e.t.Helper()
	var r row
	if err := e.db.QueryRow("SELECT value, fence, writes FROM data WHERE id = 'invoice-42'").Scan(&r.value, &r.fence, &r.writes); err != nil {
		e.t.Fatal(err)
	}
	err := e.db.QueryRow(e.q("SELECT fence FROM redlock_fences WHERE resource = $1"), "invoice-42").Scan(&r.recorded)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		e.t.Fatal(err)
	}
	rows, err := e.db.Query("SELECT fence FROM journal ORDER BY seq")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var f int64
		if err := rows.Scan(&f); err != nil {
			e.t.Fatal(err)
		}
		r.journal = append(r.journal, f)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return r
}

func forEach(t *testing.T, test func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, setup(t, b)) })
	}
}

// Two holders, fences 7 then 9: both writes land, 9's last.
func TestLowerThenHigherFenceBothWrite(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		if err := e.write(ctx, 7, "holder 7"); err != nil {
			t.Fatalf("fence 7: %v", err)
		}
		if err := e.write(ctx, 9, "holder 9"); err != nil {
			t.Fatalf("fence 9 after 7: %v", err)
		}
		got := e.state()
		want := row{value: "holder 9", fence: 9, writes: 2, recorded: 9, journal: []int64{7, 9}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("state %+v, want %+v", got, want)
		}
	})
}

// Two holders, fences 9 then 7: 7 is refused with ErrStale and changes
// nothing, in the data or the fence table.
func TestLowerFenceAfterHigherIsStale(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		if err := e.write(ctx, 9, "holder 9"); err != nil {
			t.Fatalf("fence 9: %v", err)
		}
		before := e.state()
		err := e.write(ctx, 7, "holder 7")
		if !errors.Is(err, sqlfence.ErrStale) {
			t.Fatalf("fence 7 after 9: %v, want ErrStale", err)
		}
		var se *sqlfence.StaleError
		if !errors.As(err, &se) || se.Resource != "invoice-42" || se.Fence != 7 || se.Seen != 9 {
			t.Fatalf("error %#v, want a *StaleError for invoice-42, fence 7, seen 9", err)
		}
		if after := e.state(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("the stale write changed the state: %+v, before %+v", after, before)
		}
		want := row{value: "holder 9", fence: 9, writes: 1, recorded: 9, journal: []int64{9}}
		if got := e.state(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("state %+v, want %+v", got, want)
		}
	})
}

// One holder writes with its fence again and again.
func TestEqualFenceWritesRepeatedly(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		for i := 1; i <= 5; i++ {
			if err := e.write(ctx, 12, fmt.Sprintf("write %d", i)); err != nil {
				t.Fatalf("write %d with fence 12: %v", i, err)
			}
		}
		want := row{value: "write 5", fence: 12, writes: 5, recorded: 12, journal: []int64{12, 12, 12, 12, 12}}
		if got := e.state(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("state %+v, want %+v", got, want)
		}
		if err := e.write(ctx, 11, "older"); !errors.Is(err, sqlfence.ErrStale) {
			t.Fatalf("fence 11 after 12: %v, want ErrStale", err)
		}
	})
}

// Check in the caller's own transaction: a competing Check waits for it,
// then sees its outcome. 9 holds the row while 7 arrives: 7 is stale once
// 9 commits. 7 holds it while 9 arrives: 9 writes after 7.
func TestCheckWaitsForCompetingTransaction(t *testing.T) {
	for _, order := range [][2]uint64{{9, 7}, {7, 9}} {
		first, second := order[0], order[1]
		t.Run(fmt.Sprintf("%d_then_%d", first, second), func(t *testing.T) {
			forEach(t, func(t *testing.T, e *env) {
				ctx := context.Background()
				tx, err := e.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck // committed below
				if err := e.g.Check(ctx, tx, "invoice-42", first); err != nil {
					t.Fatalf("Check(%d): %v", first, err)
				}
				done := make(chan error, 1)
				go func() { done <- e.write(ctx, second, fmt.Sprintf("holder %d", second)) }()
				select {
				case err := <-done:
					t.Fatalf("fence %d's write returned while %d's transaction held the row: %v", second, first, err)
				case <-time.After(300 * time.Millisecond):
				}
				if _, err := tx.ExecContext(ctx, e.q("UPDATE data SET value = $1, fence = $2, writes = writes + 1 WHERE id = 'invoice-42'"),
					fmt.Sprintf("holder %d", first), int64(first)); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				err = <-done
				got := e.state()
				if second < first {
					if !errors.Is(err, sqlfence.ErrStale) {
						t.Fatalf("fence %d after %d committed: %v, want ErrStale", second, first, err)
					}
					if got.value != "holder 9" || got.writes != 1 || got.recorded != 9 {
						t.Fatalf("state %+v, want only holder 9's write", got)
					}
					return
				}
				if err != nil {
					t.Fatalf("fence %d after %d: %v", second, first, err)
				}
				if got.value != "holder 9" || got.writes != 2 || got.recorded != 9 {
					t.Fatalf("state %+v, want holder 7's then holder 9's write", got)
				}
			})
		})
	}
}

// Concurrent writers with distinct random fences: the highest fence's
// write is the one left, and the writes that succeeded committed in
// increasing fence order.
func TestConcurrentWritersLeaveTheHighestFencesWrite(t *testing.T) {
	const writers, rounds = 16, 5
	forEach(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		var base uint64
		for round := 0; round < rounds; round++ {
			fences := make([]uint64, writers)
			highest := uint64(0)
			for i, p := range rng.Perm(writers) {
				fences[i] = base + uint64(p)*uint64(1+rng.Intn(3)) + uint64(p) + 1 // distinct, above base
				highest = max(highest, fences[i])
			}
			start := make(chan struct{})
			errs := make([]error, writers)
			var wg sync.WaitGroup
			for i := range fences {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-start
					errs[i] = e.write(ctx, fences[i], fmt.Sprintf("fence %d", fences[i]))
				}(i)
			}
			close(start)
			wg.Wait()
			ok := 0
			for i, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, sqlfence.ErrStale):
				default:
					t.Fatalf("round %d: fence %d: %v", round, fences[i], err)
				}
				if fences[i] == highest && err != nil {
					t.Fatalf("round %d: the highest fence %d failed: %v", round, highest, err)
				}
			}
			got := e.state()
			if got.value != fmt.Sprintf("fence %d", highest) || got.fence != int64(highest) || got.recorded != int64(highest) {
				t.Fatalf("round %d: state %+v, want the write of the highest fence %d", round, got, highest)
			}
			for i := 1; i < len(got.journal); i++ {
				if got.journal[i] < got.journal[i-1] {
					t.Fatalf("round %d: fence %d committed after fence %d: journal %v", round, got.journal[i], got.journal[i-1], got.journal)
				}
			}
			t.Logf("round %d: %d of %d writers wrote, %d were stale; highest fence %d", round, ok, writers, writers-ok, highest)
			base = highest
		}
	})
}

// A fenced write to one resource does not refuse another's.
func TestResourcesAreIndependent(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		noop := func(*sql.Tx) error { return nil }
		if err := e.g.Do(ctx, e.db, "a", 100, noop); err != nil {
			t.Fatal(err)
		}
		if err := e.g.Do(ctx, e.db, "b", 1, noop); err != nil {
			t.Fatalf("fence 1 on b after 100 on a: %v", err)
		}
		if err := e.g.Do(ctx, e.db, "a", 99, noop); !errors.Is(err, sqlfence.ErrStale) {
			t.Fatalf("fence 99 on a after 100: %v, want ErrStale", err)
		}
	})
}

// Do rolls back fn's writes when fn fails, and the fence it recorded.
func TestDoRollsBackOnError(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		boom := errors.New("boom")
		err := e.g.Do(ctx, e.db, "invoice-42", 5, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, "UPDATE data SET value = 'x' WHERE id = 'invoice-42'"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Do: %v, want boom", err)
		}
		got := e.state()
		if got.value != "initial" || got.recorded != 0 {
			t.Fatalf("state %+v after a failed Do, want nothing written", got)
		}
	})
}

// CreateTable twice is fine, and a schema-qualified table works.
func TestCreateTableIsIdempotentAndQualifiedNamesWork(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		schema := map[sqlfence.Dialect]string{sqlfence.Postgres: "public", sqlfence.SQLite: "main"}
		if e.b.dialect == sqlfence.MySQL {
			var name string
			if err := e.db.QueryRow("SELECT DATABASE()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			schema[sqlfence.MySQL] = name
		}
		if err := e.g.CreateTable(ctx, e.db); err != nil {
			t.Fatalf("second CreateTable: %v", err)
		}
		g, err := sqlfence.New(e.b.dialect, schema[e.b.dialect]+".job_fences")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.CreateTable(ctx, e.db); err != nil {
			t.Fatal(err)
		}
		noop := func(*sql.Tx) error { return nil }
		for _, f := range []uint64{3, 3, 4} {
			if err := g.Do(ctx, e.db, "job", f, noop); err != nil {
				t.Fatalf("fence %d: %v", f, err)
			}
		}
		if err := g.Do(ctx, e.db, "job", 2, noop); !errors.Is(err, sqlfence.ErrStale) {
			t.Fatalf("fence 2 after 4: %v, want ErrStale", err)
		}
		var n int
		if err := e.db.QueryRow("SELECT COUNT(*) FROM job_fences").Scan(&n); err != nil || n != 1 {
			t.Fatalf("job_fences has %d rows (%v), want 1", n, err)
		}
	})
}

func TestInvalidArguments(t *testing.T) {
	ctx := context.Background()
	g, err := sqlfence.New(sqlfence.SQLite, "")
	if err != nil {
		t.Fatal(err)
	}
	db := sqliteDB(t)
	if err := g.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // nothing to keep
	for _, c := range []struct {
		resource string
		fence    uint64
	}{{"", 1}, {"r", 0}, {"r", 1 << 63}} {
		if err := g.Check(ctx, tx, c.resource, c.fence); !errors.Is(err, sqlfence.ErrInvalidArgument) {
			t.Errorf("Check(%q, %d): %v, want ErrInvalidArgument", c.resource, c.fence, err)
		}
		if err := g.Do(ctx, db, c.resource, c.fence, func(*sql.Tx) error { return nil }); !errors.Is(err, sqlfence.ErrInvalidArgument) {
			t.Errorf("Do(%q, %d): %v, want ErrInvalidArgument", c.resource, c.fence, err)
		}
	}
	for _, table := range []string{"1abc", "a-b", "a.b.c", "a;DROP TABLE x", "é", ".x", "x.", strings.Repeat("a", 64), "a b"} {
		if _, err := sqlfence.New(sqlfence.Postgres, table); !errors.Is(err, sqlfence.ErrInvalidArgument) {
			t.Errorf("New(Postgres, %q): %v, want ErrInvalidArgument", table, err)
		}
	}
	for _, table := range []string{"fences", "_f1", "app.lock_fences", strings.Repeat("a", 63)} {
		if _, err := sqlfence.New(sqlfence.Postgres, table); err != nil {
			t.Errorf("New(Postgres, %q): %v", table, err)
		}
	}
	if _, err := sqlfence.New(sqlfence.Dialect(0), ""); !errors.Is(err, sqlfence.ErrInvalidArgument) {
		t.Errorf("New(Dialect(0)): %v, want ErrInvalidArgument", err)
	}
}

func TestStaleError(t *testing.T) {
	err := fmt.Errorf("saving: %w", &sqlfence.StaleError{Resource: "r", Fence: 7, Seen: 9})
	if !errors.Is(err, sqlfence.ErrStale) {
		t.Fatal("a wrapped *StaleError is not ErrStale")
	}
	if errors.Is(err, sqlfence.ErrInvalidArgument) {
		t.Fatal("a *StaleError is ErrInvalidArgument")
	}
	want := `saving: sqlfence: stale fence 7 for resource "r": fence 9 was already recorded`
	if err.Error() != want {
		t.Fatalf("%q, want %q", err.Error(), want)
	}
}

// The MySQL statements are not run against a server here (none is
// started by these tests): their text is pinned, so that a change to them
// is a deliberate one.
func TestMySQLStatements(t *testing.T) {
	g, err := sqlfence.New(sqlfence.MySQL, "app.fences")
	if err != nil {
		t.Fatal(err)
	}
	if g.Dialect() != sqlfence.MySQL || g.Table() != "app.fences" || g.Dialect().String() != "MySQL" {
		t.Fatalf("Dialect %v, Table %q", g.Dialect(), g.Table())
	}
	want := "CREATE TABLE IF NOT EXISTS app.fences (\n" +
		"\tresource VARCHAR(255) NOT NULL PRIMARY KEY,\n" +
		"\tfence BIGINT UNSIGNED NOT NULL\n) ENGINE=InnoDB"
	if got := g.CreateTableSQL(); got != want {
		t.Fatalf("CreateTableSQL:\n%s\nwant:\n%s", got, want)
	}
	// Check's statements, through a driver that records them.
	stmts := recordStatements(t, g, "job", 7)
	wantStmts := []string{
		"INSERT INTO app.fences (resource, fence) VALUES (?, ?)\n" +
			"ON DUPLICATE KEY UPDATE fence = IF(fence <= VALUES(fence), VALUES(fence), fence) [job 7]",
		"SELECT fence FROM app.fences WHERE resource = ? FOR UPDATE [job]",
	}
	if fmt.Sprint(stmts) != fmt.Sprint(wantStmts) {
		t.Fatalf("statements:\n%q\nwant:\n%q", stmts, wantStmts)
	}
}

func TestCreateTableSQL(t *testing.T) {
	for d, want := range map[sqlfence.Dialect]string{
		sqlfence.Postgres: "CREATE TABLE IF NOT EXISTS redlock_fences (\n\tresource TEXT PRIMARY KEY,\n\tfence BIGINT NOT NULL CHECK (fence > 0)\n)",
		sqlfence.SQLite:   "CREATE TABLE IF NOT EXISTS redlock_fences (\n\tresource TEXT PRIMARY KEY NOT NULL,\n\tfence INTEGER NOT NULL CHECK (fence > 0)\n)",
	} {
		g, err := sqlfence.New(d, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := g.CreateTableSQL(); got != want {
			t.Errorf("%v:\n%s\nwant:\n%s", d, got, want)
		}
	}
}
