package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/goredlock/goredlock/fence/sqlfence"
)

// Two holders of one lock write an invoice through the guard. The holder
// with fence 9 got the lock after the one with fence 7 (whose lease ran out
// while it was paused); 7's late write is refused and changes nothing. In a
// program the fences come from redlock's Lock.Fence, with the client made
// WithFencing.
func ExampleGuard_Do() {
	dir, err := os.MkdirTemp("", "sqlfence-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shop.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	g, err := sqlfence.New(sqlfence.SQLite, "") // the table redlock_fences
	if err != nil {
		log.Fatal(err)
	}
	if err := g.CreateTable(ctx, db); err != nil { // CREATE TABLE IF NOT EXISTS
		log.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, status TEXT)"); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO invoices VALUES (42, 'open')"); err != nil {
		log.Fatal(err)
	}

	pay := func(fence uint64, status string) error {
		return g.Do(ctx, db, "invoice-42", fence, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE invoices SET status = ? WHERE id = 42", status)
			return err
		})
	}
	fmt.Println("fence 9:", pay(9, "paid by the holder of fence 9"))
	err = pay(7, "paid by the holder of fence 7")
	fmt.Println("fence 7:", err)
	fmt.Println("stale:", errors.Is(err, sqlfence.ErrStale))

	var status string
	if err := db.QueryRow("SELECT status FROM invoices WHERE id = 42").Scan(&status); err != nil {
		log.Fatal(err)
	}
	fmt.Println("invoice 42:", status)
	// Output:
	// fence 9: <nil>
	// fence 7: sqlfence: stale fence 7 for resource "invoice-42": fence 9 was already recorded
	// stale: true
	// invoice 42: paid by the holder of fence 9
}

// Check in a transaction of the caller's: first, before the writes it
// guards.
func ExampleGuard_Check() {
	var (
		ctx   context.Context
		db    *sql.DB
		g     *sqlfence.Guard
		fence uint64 // lock.Fence()
	)
	run := func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // after Commit, a no-op
		if err := g.Check(ctx, tx, "invoice-42", fence); err != nil {
			return err // errors.Is(err, sqlfence.ErrStale): a later holder has written
		}
		if _, err := tx.ExecContext(ctx, "UPDATE invoices SET status = 'paid' WHERE id = 42"); err != nil {
			return err
		}
		return tx.Commit()
	}
	_ = run // not run: no database here
}
