// Package sqlfence makes a SQL database refuse the writes of a lock holder
// whose lock has since been granted to someone else.
//
// A fencing token (redlock's Lock.Fence, with the client made WithFencing)
// grows with every grant of a lock. A holder that was paused past its lease
// (a GC pause, a stopped process, a slow network) still has its old, lower
// token when it wakes. The lock service cannot stop that holder; the
// resource can, by remembering the highest token it has seen and refusing
// anything lower. A Guard does this inside the caller's own transaction:
//
//	g, _ := sqlfence.New(sqlfence.Postgres, "")         // table redlock_fences
//	_ = g.CreateTable(ctx, db)                           // once: CREATE TABLE IF NOT EXISTS
//	err := g.Do(ctx, db, "invoice-42", lock.Fence(), func(tx *sql.Tx) error {
//		_, err := tx.ExecContext(ctx, "UPDATE invoices SET paid = true WHERE id = 42")
//		return err
//	}) // errors.Is(err, sqlfence.ErrStale): a later holder wrote first; nothing changed
//
// # How it works
//
// The fence table holds one row per resource: the highest fence recorded
// for it. [Guard.Check] runs one atomic upsert that records the caller's
// fence unless a higher one is already there, and fails with [ErrStale]
// when it is (an equal fence succeeds: one holder writing several times).
// The upsert locks the resource's row until the transaction ends, so the
// writes of competing holders are serialised in the database: a holder
// whose Check succeeded writes, and commits, before any other holder's
// Check returns, and a lower fence can never commit after a higher one.
// Call Check first in the transaction, before the writes it guards, and
// roll back when it fails ([Guard.Do] does both).
//
// A Check that waits for a competing transaction sees its outcome when it
// commits: at PostgreSQL's default READ COMMITTED, at MySQL's default
// REPEATABLE READ (InnoDB's writes and locking reads see the newest row),
// and in SQLite, whose writers take turns. At PostgreSQL's REPEATABLE READ
// or SERIALIZABLE the waiting transaction fails with a serialization error
// instead, and MySQL may end one with a deadlock error; retry the
// transaction, and its Check then says ErrStale if its fence is no longer
// the newest.
//
// SQLite takes the database's write lock at the Check, which is why Check
// must be the transaction's first statement there: a transaction that read
// first may fail with SQLITE_BUSY when it comes to write, instead of
// waiting its busy timeout. Set one (e.g. _pragma=busy_timeout(5000) with
// modernc.org/sqlite), or begin transactions IMMEDIATE.
//
// # Dialects
//
// [Postgres] (9.5 or later) uses INSERT … ON CONFLICT … DO UPDATE … WHERE
// … RETURNING; [SQLite] (3.24 or later) the same upsert without RETURNING,
// reading the rows it changed; [MySQL] (MariaDB 10.3 or later, MySQL 5.7
// and 8) INSERT … ON DUPLICATE KEY UPDATE with IF() and VALUES(), then a
// locking read. The tests run them on real servers: PostgreSQL 15 (through
// github.com/lib/pq), SQLite 3 (modernc.org/sqlite, no cgo) and MariaDB
// 10.11 (github.com/go-sql-driver/mysql). Oracle's MySQL server is not
// tested; MySQL 8.0.20 and later accept VALUES() there with a deprecation
// warning.
//
// The package imports database/sql only; the program chooses and imports
// the driver.
package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
)

// DefaultTable is the fence table's name when New is given "".
const DefaultTable = "redlock_fences"

// ErrStale says that a fence higher than the caller's was already recorded
// for the resource: the caller's lock was granted to someone else since,
// and its write must not happen. Check returns a *StaleError that matches
// it with errors.Is.
var ErrStale = errors.New("sqlfence: stale fence")

// ErrInvalidArgument says that a call was given an argument that can never
// work: fence 0, an empty resource, an unknown dialect, a bad table name.
var ErrInvalidArgument = errors.New("sqlfence: invalid argument")

// StaleError is the error of a stale fence: Fence is the caller's, Seen
// the higher one already recorded for Resource. errors.Is(err, ErrStale)
// holds for it.
type StaleError struct {
	Resource string
	Fence    uint64
	Seen     uint64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("sqlfence: stale fence %d for resource %q: fence %d was already recorded", e.Fence, e.Resource, e.Seen)
}

// Is makes errors.Is(err, ErrStale) true for a *StaleError.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Dialect is the SQL dialect a Guard writes its statements in.
type Dialect int

const (
	// Postgres is PostgreSQL 9.5 or later (and what speaks its dialect of
	// INSERT … ON CONFLICT, e.g. CockroachDB, untested). Placeholders are
	// $1, $2.
	Postgres Dialect = iota + 1
	// SQLite is SQLite 3.24 or later. Placeholders are ?.
	SQLite
	// MySQL is MariaDB 10.3 or later (tested on 10.11) and MySQL 5.7 or 8
	// (untested), with InnoDB. Placeholders are ?. A resource is at most
	// 255 characters there (VARCHAR(255)).
	MySQL
)

func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "Postgres"
	case SQLite:
		return "SQLite"
	case MySQL:
		return "MySQL"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// Guard records and checks fences in one table of one database. It holds
// no connection and no state beyond its statements: make one per table and
// share it.
type Guard struct {
	dialect Dialect
	table   string
	create  string // CREATE TABLE IF NOT EXISTS
	upsert  string // record the fence unless a higher one is there
	read    string // the recorded fence
}

// New returns a Guard for dialect whose fences live in table, DefaultTable
// when table is "". The name is used as written, unquoted, so it must be
// an identifier (letters, digits, underscores, not starting with a digit,
// at most 63 characters), optionally qualified by a schema as
// "schema.table"; anything else is ErrInvalidArgument, as is an unknown
// dialect.
func New(dialect Dialect, table string) (*Guard, error) {
	if table == "" {
		table = DefaultTable
	}
	if err := checkTable(table); err != nil {
		return nil, err
	}
	g := &Guard{dialect: dialect, table: table}
	switch dialect {
	case Postgres:
		g.create = "CREATE TABLE IF NOT EXISTS " + table + " (\n" +
			"\tresource TEXT PRIMARY KEY,\n" +
			"\tfence BIGINT NOT NULL CHECK (fence > 0)\n)"
		// Rows the WHERE keeps from updating are still locked, and not
		// returned: no row is a stale fence.
		g.upsert = "INSERT INTO " + table + " AS f (resource, fence) VALUES ($1, $2)\n" +
			"ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence\n" +
			"RETURNING fence"
		g.read = "SELECT fence FROM " + table + " WHERE resource = $1"
	case SQLite:
		g.create = "CREATE TABLE IF NOT EXISTS " + table + " (\n" +
			"\tresource TEXT PRIMARY KEY NOT NULL,\n" +
			"\tfence INTEGER NOT NULL CHECK (fence > 0)\n)"
		// An upsert whose WHERE is false changes no row: 0 rows affected
		// is a stale fence. The database's write lock is held from here
		// to the end of the transaction.
		g.upsert = "INSERT INTO " + table + " (resource, fence) VALUES (?, ?)\n" +
			"ON CONFLICT (resource) DO UPDATE SET fence = excluded.fence WHERE " + unqualified(table) + ".fence <= excluded.fence"
		g.read = "SELECT fence FROM " + table + " WHERE resource = ?"
	case MySQL:
		g.create = "CREATE TABLE IF NOT EXISTS " + table + " (\n" +
			"\tresource VARCHAR(255) NOT NULL PRIMARY KEY,\n" +
			"\tfence BIGINT UNSIGNED NOT NULL\n) ENGINE=InnoDB"
		// Rows affected cannot tell an equal fence from a stale one (both
		// change nothing), so a locking read follows: FOR UPDATE reads the
		// latest committed row, not the transaction's snapshot. VALUES()
		// rather than MySQL 8's row alias, which MariaDB lacks.
		g.upsert = "INSERT INTO " + table + " (resource, fence) VALUES (?, ?)\n" +
			"ON DUPLICATE KEY UPDATE fence = IF(fence <= VALUES(fence), VALUES(fence), fence)"
		g.read = "SELECT fence FROM " + table + " WHERE resource = ? FOR UPDATE"
	default:
		return nil, fmt.Errorf("%w: unknown dialect %v", ErrInvalidArgument, dialect)
	}
	return g, nil
}

// Table returns the name of the fence table.
func (g *Guard) Table() string { return g.table }

// Dialect returns the guard's dialect.
func (g *Guard) Dialect() Dialect { return g.dialect }

// CreateTableSQL returns the statement that creates the fence table if it
// does not exist, for a migration tool. In PostgreSQL:
//
//	CREATE TABLE IF NOT EXISTS redlock_fences (
//		resource TEXT PRIMARY KEY,
//		fence BIGINT NOT NULL CHECK (fence > 0)
//	)
//
// Rows are never deleted by the guard: a resource's row is what refuses
// its stale writers. Delete one only when no holder of its lock can write
// any more.
func (g *Guard) CreateTableSQL() string { return g.create }

// Execer is what runs a statement: a *sql.DB, *sql.Conn or *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// CreateTable runs CreateTableSQL on db. It does nothing to a table that
// exists, so a program may call it at every start.
func (g *Guard) CreateTable(ctx context.Context, db Execer) error {
	if _, err := db.ExecContext(ctx, g.create); err != nil {
		return fmt.Errorf("sqlfence: creating table %s: %w", g.table, err)
	}
	return nil
}

// Check records fence for resource in tx and returns nil, unless a higher
// fence was already recorded for it: then it returns a *StaleError
// (errors.Is(err, ErrStale)) and the table is unchanged. An equal fence
// succeeds. Call it first in the transaction, before the writes it guards:
// from here to the end of tx, the resource's row (SQLite: the database) is
// locked, so no other holder's Check returns until tx commits or rolls
// back. Roll tx back on any error.
//
// fence 0 (what Lock.Fence returns without fencing), a fence above
// math.MaxInt64 and an empty resource are ErrInvalidArgument. Other errors
// are the database's, wrapped.
func (g *Guard) Check(ctx context.Context, tx *sql.Tx, resource string, fence uint64) error {
	if err := checkArgs(resource, fence); err != nil {
		return err
	}
	f := int64(fence) // checkArgs bounds it
	switch g.dialect {
	case Postgres:
		var got int64
		err := tx.QueryRowContext(ctx, g.upsert, resource, f).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) {
			return g.stale(ctx, tx, resource, fence)
		}
		if err != nil {
			return g.dbErr(resource, err)
		}
		return nil
	case SQLite:
		res, err := tx.ExecContext(ctx, g.upsert, resource, f)
		if err != nil {
			return g.dbErr(resource, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return g.dbErr(resource, err)
		}
		if n == 0 {
			return g.stale(ctx, tx, resource, fence)
		}
		return nil
	default: // MySQL
		if _, err := tx.ExecContext(ctx, g.upsert, resource, f); err != nil {
			return g.dbErr(resource, err)
		}
		seen, err := g.recorded(ctx, tx, resource)
		if err != nil {
			return err
		}
		if seen > fence {
			return &StaleError{Resource: resource, Fence: fence, Seen: seen}
		}
		return nil
	}
}

// Do runs fn in a transaction on db guarded by fence: it begins the
// transaction, runs Check, then fn, then commits. On any error, Check's
// ErrStale included, it rolls back and returns that error, so nothing fn
// wrote is kept. fn must not commit or roll back tx itself.
func (g *Guard) Do(ctx context.Context, db *sql.DB, resource string, fence uint64, fn func(tx *sql.Tx) error) (err error) {
	if err := checkArgs(resource, fence); err != nil {
		return err // before a connection is taken
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlfence: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // err says why; a failed rollback ends the transaction anyway
		}
	}()
	if err := g.Check(ctx, tx, resource, fence); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// stale returns the StaleError of fence, with the fence recorded.
func (g *Guard) stale(ctx context.Context, tx *sql.Tx, resource string, fence uint64) error {
	seen, err := g.recorded(ctx, tx, resource)
	if err != nil {
		return err
	}
	return &StaleError{Resource: resource, Fence: fence, Seen: seen}
}

// recorded reads the fence recorded for resource.
func (g *Guard) recorded(ctx context.Context, tx *sql.Tx, resource string) (uint64, error) {
	var seen int64
	if err := tx.QueryRowContext(ctx, g.read, resource).Scan(&seen); err != nil {
		return 0, g.dbErr(resource, err)
	}
	return uint64(seen), nil
}

func (g *Guard) dbErr(resource string, err error) error {
	return fmt.Errorf("sqlfence: fence of %q in %s: %w", resource, g.table, err)
}

func checkArgs(resource string, fence uint64) error {
	switch {
	case resource == "":
		return fmt.Errorf("%w: empty resource", ErrInvalidArgument)
	case fence == 0:
		return fmt.Errorf("%w: fence 0 is no fence (is the lock client made WithFencing?)", ErrInvalidArgument)
	case fence > math.MaxInt64:
		return fmt.Errorf("%w: fence %d is above the largest a BIGINT holds", ErrInvalidArgument, fence)
	}
	return nil
}

// checkTable accepts "name" and "schema.name", each part an unquoted
// identifier of at most 63 bytes (PostgreSQL's limit).
func checkTable(table string) error {
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return fmt.Errorf("%w: table name %q: at most one dot (schema.table)", ErrInvalidArgument, table)
	}
	for _, p := range parts {
		if !identifier(p) {
			return fmt.Errorf("%w: table name %q: each part must be letters, digits and underscores, not starting with a digit, 1 to 63 characters", ErrInvalidArgument, table)
		}
	}
	return nil
}

func identifier(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// unqualified returns table without its schema: SQLite names the
// conflicting row by the bare table name in DO UPDATE's WHERE.
func unqualified(table string) string {
	if i := strings.LastIndexByte(table, '.'); i >= 0 {
		return table[i+1:]
	}
	return table
}
