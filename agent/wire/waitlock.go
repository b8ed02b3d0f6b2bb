package wire

import "sync"

// WaitLock is a mutex for a lock held across a stream or connection write
// that may wait for flow control or for a peer to read (a tunnel's writes
// down or up, its resume). Its waiters block on a channel, so a goroutine
// waiting for it counts as blocked on the network, not as running: under
// testing/synctest fake time advances only while every goroutine is so
// blocked, and a sync.Mutex waiter behind a write that waits for a timer
// (a retransmission, a path that comes back after an outage) froze the
// clock. Its zero value is unlocked.
type WaitLock struct {
	once sync.Once
	ch   chan struct{}
}

func (l *WaitLock) init() { l.ch = make(chan struct{}, 1) }

// Lock waits for the lock.
func (l *WaitLock) Lock() {
	l.once.Do(l.init)
	l.ch <- struct{}{}
}

// Unlock gives it back; it must be held.
func (l *WaitLock) Unlock() {
	l.once.Do(l.init)
	<-l.ch
}
