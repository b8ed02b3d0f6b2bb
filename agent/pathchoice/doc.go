// Package pathchoice is ct-client's choice of path for a request: the
// schedulers (minrtt, rr, lob, ect, priority, learned) and Choose, which
// leaves out the paths a request should not use now (down, a backup while a
// primary works, tried already, a sibling lane of a tried path, suspected of
// a stall) before a scheduler picks among the rest.
//
// It is apart from the client because it is pure: no I/O, no clock (the
// moment of the choice comes in as an argument) and no locks, so every rule
// is a row of a table test. The client takes a snapshot of its paths under
// their locks, calls Choose, and waits for a change when nothing is usable.
package pathchoice
