package redlock

// Settle waits until every call c left running in the background has
// ended: the calls of a grant or a release to the servers slower than the
// quorum, which tests that count a server's commands must not see land
// after they start counting. c must be idle: no call of it in flight.
func Settle(c *Client) { c.bg.Wait() }
