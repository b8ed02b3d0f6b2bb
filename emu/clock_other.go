//go:build !linux

package emu

import "errors"

func newTimerfdWaiter() (Waiter, error) { return nil, errors.New("timerfd: Linux only") }
