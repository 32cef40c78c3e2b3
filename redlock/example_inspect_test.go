package redlock_test

import (
	"context"
	"fmt"
	"log"
	"time"
)

func ExampleClient_Inspect() {
	client, closeServers := newClient()
	defer closeServers()
	ctx := context.Background()

	lock, err := client.Acquire(ctx, "nightly-report", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release(ctx)
	permit, err := client.Semaphore("nightly-report", 3).Acquire(ctx, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer permit.Release(ctx)

	// Who holds what under the name, as a quorum of servers agrees; the
	// holder is named by a tag, never by its token.
	st, err := client.Inspect(ctx, "nightly-report")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("lock held:", st.Held, "by the holder tagged", st.Holder == lock.Token()[17:25])
	fmt.Printf("permits in use: %d of %d\n", st.Semaphore.InUse, st.Semaphore.Permits)
	fmt.Println("servers that answered:", len(st.Servers))
	// Output:
	// lock held: true by the holder tagged true
	// permits in use: 1 of 3
	// servers that answered: 3
}
