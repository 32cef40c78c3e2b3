// Package redlockotel turns a [redlock.Client]'s hooks into OpenTelemetry
// metrics and spans. It is a module of its own, so that users of the
// redlock package who do not use OpenTelemetry never download it.
//
//	client, err := redlock.New(servers, redlock.WithHooks(redlockotel.Hooks()))
//	if err != nil { return err }
//	defer client.Close()
//	err = client.Do(ctx, "nightly-report", 30*time.Second, report) // a span, and acquire and hold metrics
//
// [Hooks] reports to the global meter and tracer providers unless
// [WithMeterProvider] or [WithTracerProvider] says otherwise. The global
// providers may be installed after Hooks is called: OpenTelemetry hands
// the instruments over to them when they are.
//
// # Metrics
//
// Names and units follow OpenTelemetry's semantic conventions; durations
// are in seconds.
//
//	redlock.lock.acquire.duration  histogram  s          from the start of Acquire, TryAcquire, Do or DoOrSkip to the grant or the failure
//	redlock.lock.acquire.attempts  histogram  {attempt}  attempts made by that acquisition
//	redlock.lock.hold.duration     histogram  s          from the grant to the release, or to the loss
//	redlock.lock.losses            counter    {loss}     locks declared lost before they were released
//	redlock.key_server.errors      counter    {error}    failed calls to key servers
//	redlock.lock.at_risk           counter    {transition}  held locks that entered the at-risk state (redlock.Lock.Health)
//	redlock.lock.contended         counter    {signal}   held locks told another call waits in a quorum of their lines (when the holder asked)
//	redlock.lock.waiters           gauge      {waiter}   waiters ahead of a refused attempt in a server's line, sampled at the refusal
//
// Their attributes:
//
//	redlock.lock.name                  every metric; the lock's name (see WithoutLockName)
//	redlock.operation.name             acquire metrics: acquire, try_acquire, do, do_or_skip; for sets
//	                                   acquire_all, try_acquire_all, do_all, do_all_or_skip
//	redlock.lock.names                 acquire metrics of a set's operation only: the number of its names
//	redlock.acquire.outcome            acquire metrics: acquired, held_elsewhere, unavailable, cancelled, error
//	redlock.lock.hold.lost             hold duration: true when the hold ended in a loss
//	redlock.key_server.index           key server errors: the server's index in the slice given to redlock.New
//	redlock.key_server.operation.name  key server errors: acquire, extend, release
//	error.type                         key server errors: context.DeadlineExceeded, context.Canceled, keyserver.ErrPermanent, keyserver.ErrInvalidArgument, _OTHER
//
// The outcome of an acquisition is cancelled when its context ended
// before it could be granted, whatever the votes were; held_elsewhere
// when a quorum of servers answered that another holder has the lock
// (DoOrSkip skips then); unavailable when too few servers answered; and
// error for anything else, such as a closed client. A key server call
// that timed out is an error of that server (error.type
// context.DeadlineExceeded), and an acquisition that failed because of
// such timeouts is unavailable, not cancelled; calls cut short because
// the caller's context ended count as errors too, with error.type
// context.Canceled or context.DeadlineExceeded.
//
// A set of names (AcquireAll, TryAcquireAll, DoAll, DoAllOrSkip) is
// named by its names joined by commas, without duplicates, in the order
// given; its acquire metrics and its span also carry redlock.lock.names,
// the number of names (counted as the commas in that name plus one, so a
// name that contains a comma counts as more than one). It stays under
// WithoutLockName: a set of 4 names is one series, whatever the names.
// One lock's operations never carry it, and neither do the hold, loss and
// at-risk metrics, which a set reports under its joined name as a lock's.
//
// Every metric carries the lock's name, which is what operators look
// for; but each distinct name is a time series of its own in every
// metric, so names must be few: "nightly-report", not "invoice-81723".
// Programs that lock one name per object should drop the attribute
// with [WithoutLockName].
//
// # Spans
//
// Each Acquire, TryAcquire, Do and DoOrSkip call is a span named
// redlock.acquire, redlock.try_acquire, redlock.do or redlock.do_or_skip,
// from the start of the call to its return, with the lock's name as the
// attribute redlock.lock.name (spans keep it under WithoutLockName: they
// are not aggregated), and redlock.acquire.outcome and
// redlock.acquire.attempts once the acquisition ended. A set's span
// is named after its operation the same way (redlock.acquire_all,
// redlock.try_acquire_all, redlock.do_all, redlock.do_all_or_skip) and
// carries redlock.lock.names. Do's function runs
// inside the span, so the spans it starts are its children. Its events:
//
//	redlock.attempt             each attempt: redlock.attempt.number, .granted (bool), .duration (s), redlock.key_server.count,
//	                            and the votes when its outcome was decided, redlock.votes.granted, .refused, .failed
//	redlock.lock.granted        the lock was granted
//	redlock.lock.extended       Do's keep-alive extended the lock (redlock.lock.extend_failed when it could not)
//	redlock.lock.lost           the lock was lost while Do held it
//	redlock.lock.released       Do released the lock
//	redlock.key_server.error    a key server failed to answer
//
// A call that returns an error records it (an exception event), sets the
// span's status to Error and its error.type to the redlock error it
// matches (redlock.ErrHeldElsewhere, redlock.ErrNotAcquired,
// redlock.ErrLockLost, ...; _OTHER for an error of Do's function); DoOrSkip
// skipping a lock held elsewhere is not an error. Locks returned by Acquire
// are released or lost after their span ended: their hold and loss show in
// the metrics only.
//
// Lock tokens never appear in attributes, events or metrics.
package redlockotel
