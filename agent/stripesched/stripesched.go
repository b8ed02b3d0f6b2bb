// Package stripesched is the striping scheduler's policy, pure: given what
// ct-client knows of its paths (round trip, delivery rate, bytes owed) and
// of one striped download (bytes requested ahead of the app, bytes left),
// it says how large a piece a path should request now, or none; how many
// bytes the download may hold in its reorder buffer; and whether a piece
// that holds the app up should be requested again on a faster path.
//
// The aim is a download that is never slower striped than on its best
// path alone, and that reaches the paths' summed rate. Four rules get
// there, each after a multipath transport:
//
//   - Pieces and the window follow each path's bandwidth-delay product
//     (PieceSize, Window), not a fixed count: a fast path has enough in
//     flight to cover its round trip, and the window covers what the
//     paths deliver while the slowest piece that is allowed is out.
//   - A slower path takes only a piece it delivers before the faster
//     paths would fill the window behind it (head-of-line blocking,
//     BLEST: Ferlin et al., IFIP Networking 2016), and only while it
//     finishes no later than the others would finish all that is left
//     without it (ECF: Lim et al., CoNEXT 2017). A path that would only
//     add blocking gets nothing.
//   - Near the end each path takes its share of what is left such that
//     all finish together (Balance).
//   - A piece that holds the window is requested again on a path that
//     would deliver it clearly sooner (MPTCP's opportunistic
//     retransmission, Raiciu et al., NSDI 2012), its first path's pieces
//     sharing that path round-robin (Due); the first copy to arrive is
//     used.
//
// Nothing here reads a clock: times are seconds from the caller's now.
package stripesched

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Path is what the scheduler knows of one path.
type Path struct {
	RTT    time.Duration // smoothed round trip
	Rate   float64       // delivery rate, bytes/s (> 0)
	Queued int64         // bytes requested on it and not yet received
	// Guess: Rate is not measured yet but guessed (from the congestion
	// window, or a default); it may be several times the path's rate.
	Guess bool
	// Peak is a higher estimate of the rate the path may deliver (0 or
	// below Rate: none), for the rules that must not underrate a path:
	// the bytes the other paths deliver while a slower piece is out
	// (Take's rules 3 and 4, hidden) and the window that must hold them.
	// A stripe's own measurement counts its start-up: on a loaded machine
	// a 150 Mbit/s path's first pieces took 100 ms to begin and 400 ms to
	// reach its rate, so it read 1.2, then 8.7 MB/s for a true 18; the
	// window, sized from that, shrank from 10 to 2 MB, and a 125 ms path's
	// pieces held the fast path idle (the matrix's 10 : 1 with 2.5× the
	// RTT, 0.97–0.99 × the best path alone).
	Peak float64
	// Ramping: the path's delivery still grows round trip by round trip,
	// the path keeps up with what it is asked for (Ramp) and its round
	// trip has not risen over its least (Queuing): its true
	// rate may be well above Rate, and Take plans its requests at
	// StartupGain times it (planned).
	Ramping bool
	// Last is the rate the path delivered over its last round trip (0:
	// none yet). In slow start it is the path's current rate, twice
	// what the estimate's span averages to; planned ramps from it.
	Last float64
	// Least is the least round trip of the path's connection (0: not
	// known): RTT without the queue at its bottleneck (QueueFree).
	Least time.Duration
}

// upper is the path's rate where underrating it lets a slower path's
// piece hold the window: Peak, if higher than Rate.
func (p Path) upper() float64 { return max(p.Rate, p.Peak) }

// Done is when the path would have delivered size more bytes requested
// now, in seconds from now: the request's round trip or the queue ahead
// of it, whichever is longer, then the bytes at the path's rate.
func (p Path) Done(size int64) float64 {
	return max(p.RTT.Seconds(), float64(p.Queued)/p.Rate) + float64(size)/p.Rate
}

// Ahead is the path for a request sent ahead of its queue: the bytes the
// app waits on now, which the path's sender serves before the pieces
// asked before them (agent/stripe's Host.Fetch, next), so they wait only
// for the request's round trip, whose smoothed RTT includes what the
// network already queues. Judged behind the queue, the original's rest on
// a crawling lossy lane was not moved to the fast path while that path
// held three pieces (fake time, 80/15 + 40/5 with 1 % loss: the app's
// first byte past the 256 KiB head came 340 ms after the request).
func (p Path) Ahead() Path {
	p.Queued = 0
	return p
}

// lift is p as the rules that share the end judge the path of the
// highest rate (lifted): at its upper rate and its least round trip (QueueFree).
// Its own estimate still averages its start-up near the end, and its
// smoothed round trip counts the queue its pieces built, which Queued
// counts again: a far fast path read 6.1–6.6 of its 10.25 MB/s and
// 300–350 ms of its 229, so Balance gave it less than its share of the
// end, and a lossy slower path, "fastest" by those views, took the last
// pieces and delivered them ~0.1 s after the fast path had finished
// (fake time, 82/229 + 5/49 Mbit/s/ms with 0.9 % loss on the near path:
// TestStripeSweep seed 7's mix 58, 0.95–1.02 × the time on the fast path
// alone; TestStripeLossySlowBesideFarFast).
func (p Path) lift() Path {
	p.Rate, p.RTT = p.upper(), QueueFree(p.RTT, p.Least)
	return p
}

// bdp is the path's bandwidth-delay product in bytes.
func (p Path) bdp() int64 { return int64(p.Rate * p.RTT.Seconds()) }

// Piece sizes. A piece is one Range request through ct-server: each costs
// a stream and a request head both ways, so a fast path gets large ones.
const (
	// PieceSpan is how long a path's own piece takes at its rate: long
	// enough that request overhead is a few per cent of a fast path's
	// bytes, short enough that a piece lost with its path is cheap.
	PieceSpan = 100 * time.Millisecond
	// MinPiece is the smallest piece worth a request (a few packets'
	// worth of heads would otherwise dominate a slow path's share).
	MinPiece = 32 << 10
	// MaxPiece bounds one piece: what a path failing mid-piece costs.
	MaxPiece = 4 << 20
)

// Reorder window bounds. The window is the memory one striped download
// holds for the app: pieces fetched ahead of the one it waits for.
const (
	// MinWindow is the window before rates are known: eight of the
	// former fixed 256 KiB pieces, the size that served equal paths.
	MinWindow = 2 << 20
	// MaxWindow bounds the memory of one striped download.
	MaxWindow = 32 << 20
	// pipelinePieces is how many of its own pieces a path keeps
	// requested beyond its bandwidth-delay product (Take's rule 1).
	pipelinePieces = 2
)

// The probe of a path whose rate is a guess (Take). Its sender starts in
// slow start, and a QUIC sender (quic-go's, as TCP's) grows its
// congestion window only while the bytes it has in flight fill at least
// half of it: a probe smaller than the initial window leaves the window
// about where it started, so the path's next round trip carries barely
// more, and the lag lasts as long as slow start does. A MinPiece probe
// (32 kB) so kept a far fast path beside a near slower one a round trip
// behind its start alone (80 Mbit/s / 250 ms beside 16 / 40: 50 kB in its
// second round trip against 136 alone, 8 MB striped in 0.84 of the time
// the two paths take when each delivers what it can alone, sweepBound;
// ramp61). Twice the initial window keeps the window's growth for the
// probe's first round trip, and the path is measured (and fed by its
// estimate) once a MinPiece of it has arrived, not once it lands. Only
// on a round trip of PieceSpan or more (as planned's start-up): on a
// shorter one the stall costs a few ms, and on the matrix's two equal
// 16 Mbit/s paths 10 ms away the larger probe, from the object's far
// end, took 8 MB from 2.18 to 2.34 s (fake time).
const (
	// InitialWindow is a QUIC sender's first congestion window: quic-go's
	// 32 packets of at most 1252 bytes.
	InitialWindow = 32 * 1252
	// GuessProbe is twice it (StartupGain: one slow-start round's growth),
	// about 78 KiB: a slower path's probe, taken from the object's far
	// end (agent/stripe's take), holds no byte the app waits on.
	GuessProbe = StartupGain * InitialWindow
)

// PieceHead is the room a piece's response head takes in its stream's
// receive window (WindowPiece): its status and headers, a few hundred
// bytes through ct-server (a 1 KiB margin sufficed on fake time), here
// with room for an origin's long headers.
const PieceHead = 16 << 10

// WindowPiece is the largest piece a new stream whose receive window
// starts at window bytes (0: unbounded) carries without waiting for the
// window's update: each piece is a stream of its own, and one larger
// than its window moves that window's bytes and then waits a round trip
// for the update, while its path's sender, which sends a path's pieces in
// the order asked (PathState.InOrder), holds every later piece behind it.
// Where the path's rate times its round trip is under the window the
// update comes before the window is spent and the cap costs only requests.
// A far fast path's last pieces, sized by Balance at 1.7 MB against a
// 1 MiB window, so stalled 200 ms after their first MiB: 137 Mbit/s /
// 277 ms beside 9 / 12 took 13 MB in 1.057 × the time on the far path
// alone, 0.96–1.0 × capped (fake time; farend65).
func WindowPiece(window int64) int64 {
	if window <= 0 {
		return MaxPiece
	}
	return max(window-PieceHead, MinPiece)
}

// PieceSize is the piece path p requests when nothing else limits it:
// PieceSpan of its rate, within [MinPiece, MaxPiece].
func PieceSize(p Path) int64 {
	return min(max(int64(p.Rate*PieceSpan.Seconds()), MinPiece), MaxPiece)
}

// Window is the reorder window in bytes for a download striped over
// paths, within [MinWindow, MaxWindow]: room for every path's pipeline
// (pipeline: what Take lets it keep requested) and, behind a piece that
// holds the app, for what all paths deliver while it is out — the
// longest a path's own piece takes (its round trip and PieceSize at its
// rate; for a ramping path, its planned pipeline: held; left, the bytes
// not yet requested, decides whether it ramps: planned). A window that
// holds both never stops a fast path while a slow path's piece is on
// time; one sized from the farthest round trip alone did, where a slow
// path's smallest piece takes longer than its round trip (a 20 : 1 mix).
func Window(paths []Path, left int64) int64 {
	var rate, wait float64
	var pipes int64
	for i, p := range paths {
		if p.Rate <= 0 {
			continue
		}
		others := slices.Concat(paths[:i], paths[i+1:])
		q := planned(p, others, left)
		if Swiftest(p, others) {
			// As Take keeps it: the swiftest path's pipeline at its Peak where
			// that is higher, for its estimate still averages its start-up
			// near the end (6.3–11 MB/s on far paths whose Peak was 15–16.7),
			// and a pipeline sized from it left the path short.
			q.Rate = max(q.Rate, p.upper())
		}
		rate += p.upper()
		pipes += pipeline(q)
		wait = max(wait, held(p, q))
	}
	w := pipes + int64(rate*wait)
	return min(max(w, MinWindow), MaxWindow)
}

// held is how long a piece of path p, planned as q (planned), may hold
// the window: its round trip and its own piece at its rate; for a path
// that ramps, the round trip and the whole pipeline Take lets it keep at
// its planned rate. Take cuts such a path's queue to what lands before
// the others fill the room left in the window (rule 3), so a window
// sized for one piece held it to about 0.1 s of its planned rate, and
// what it was asked for grew 1.3×, not 2×, per round trip: on sockets a
// 15 Mbit/s path 125 ms away beside a 150 Mbit/s one read 0.22, 0.23,
// 0.41, 0.62, 0.75, 0.99 MB/s round by round, while the window stood
// full behind its pieces and the fast path waited (ramp31's trace).
func held(p, q Path) float64 {
	if q.Rate != p.Rate {
		return p.RTT.Seconds() + float64(pipeline(q))/q.Rate
	}
	return p.RTT.Seconds() + float64(PieceSize(p))/p.Rate
}

// pipeline is how many bytes path p keeps requested and not yet
// received when nothing else limits it: its bandwidth-delay product and
// pipelinePieces of its own pieces.
func pipeline(p Path) int64 { return p.bdp() + pipelinePieces*PieceSize(p) }

// Stripe is the state of one striped download.
type Stripe struct {
	Window int64 // reorder window, bytes (Window)
	Ahead  int64 // bytes requested beyond what the app has been given
	Left   int64 // bytes of the object not yet requested
	// Lambda scales what the other paths are expected to deliver while a
	// slower path's piece is out (Take's rule 3): BLEST's λ, learnt by
	// the stripe from the pieces that did block the window (NextLambda).
	// 0 counts as 1, the estimates taken as they are.
	Lambda float64
}

// λ's bounds and steps (NextLambda).
const (
	// MaxLambda: at eight times the others' rate a slower path's piece
	// must land within an eighth of the time the window allows; on the
	// mixes worth striping that is under MinPiece, so the path waits (a
	// path that only adds blocking gets nothing). λ falls only as slower
	// pieces land on time, so a path cut off entirely stays off for the
	// rest of that download; the next download starts at λ 1.
	MaxLambda = 8
	// LambdaGrow is λ's factor after a piece that blocked: a blocked
	// window idles the fastest path, so λ reaches its bound within a few
	// such pieces (1.5⁵ ≈ 7.6).
	LambdaGrow = 1.5
	// LambdaDecay is subtracted after a slower path's piece that did not
	// block: two on time undo a blocking at λ = 1, so the odd late piece
	// of a start-up (estimates not yet measured) is soon forgotten — at
	// 0.05 one such piece held a 2 : 1 mix's second path down for the
	// rest of the transfer (1.50–1.65 × the best path alone instead of
	// 1.69–1.79 ×) — while a path whose pieces are late one time in three
	// or more (a 1 %-lossy path loses a packet in about 40 % of its
	// 70 kB pieces) keeps λ up.
	LambdaDecay = 0.25
)

// NextLambda is λ after a slower path's piece reached the head of the
// window: blocked when the app waited for it while the window kept
// another path from requesting (BLEST's head-of-line blocking event).
// λ follows the estimates' error where they err on the slow side: a
// lossy path whose pieces land late by a retransmission, a path whose
// delay swings, a machine whose CPU delays a path's packets.
func NextLambda(lambda float64, blocked bool) float64 {
	lambda = max(lambda, 1)
	if blocked {
		return min(lambda*LambdaGrow, MaxLambda)
	}
	return max(lambda-LambdaDecay, 1)
}

// Take is how many bytes path own should request now, or 0 to wait, with
// the stripe's other paths in others. It is the sole decision a stripe
// worker makes before each piece:
//
//  1. Pipelining: a path whose queue already covers its round trip and
//     two pieces waits; requesting more only lengthens its queue. Two,
//     not one: the rate is measured from what the path delivers, so a
//     pipeline sized exactly to the estimate never lets the estimate
//     grow (measured: a 150 Mbit/s path held near 40 % of its rate).
//  2. Window: no piece beyond the reorder window, except one that lands
//     before the other paths deliver what they owe (hidden): such a
//     piece never holds the app up, so rules 3 and 4 hold for it too.
//  3. Blocking (BLEST): unless own would deliver the piece no later
//     than any other path, the piece is cut so that it lands before the
//     others, at their summed rate times the stripe's λ, fill the window
//     behind it.
//  4. Tail (ECF): unless own is that fastest path, it takes the piece
//     only if it lands no later than the others would deliver all that
//     is left without it.
//  5. End (Balance): no path takes more than its share of what is left
//     when every path is to finish at once, nor anything when the others
//     would deliver all that is left before its own queue drains; a
//     share under MinPiece is rounded up to it, and one that would leave
//     less than MinPiece grows to all that is left: a far fast path took
//     a MinPiece with 35 kB left, and the 3 kB sliver went to a lossy
//     slower path once its pipeline had room, 0.3 s later.
//  6. Idle (unstick): when no path has anything in flight and the rules
//     above give own nothing, own takes MinPiece (or all that is left,
//     if less) if no other path would land that piece sooner.
//
// A path whose rate is a guess probes, when it has company: one piece at
// a time until its rate is measured, a GuessProbe where its round trip is
// PieceSpan or more (farProbe: not cut by hidden), else MinPiece. A
// guess from the first congestion window made a 10 : 1 mix's slow path
// look twice as fast as it was and the fast path, its queue full, look
// slower than that: the slow path's first pieces, sized to the guess,
// held the window for several round trips while the fast path waited.
//
// Rules 4 and 5 and the exemption below judge the path of the highest
// rate at what it may deliver (lifted): near the end its own estimate
// still averages its start-up, and underrated it hands the end to slower
// paths that finish after it.
//
// The path of the highest rate (Swiftest), and while λ is 1 the path
// that lands the piece first (Fastest), are never refused for the rules
// 3 and 4, so some path takes a piece while the window and pipelines
// allow (TestTakeSomeoneTakes) unless rule 5 refuses those paths; rule 6
// then keeps the stripe from stalling (TestTakeIdleEnd).
func Take(own Path, others []Path, s Stripe) int64 {
	if size := take(own, others, s); size > 0 {
		return size
	}
	return unstick(own, others, s)
}

// take is Take's rules 1–5.
func take(own Path, others []Path, s Stripe) int64 {
	if s.Left <= 0 || own.Rate <= 0 {
		return 0
	}
	plan := planned(own, others, s.Left)
	var buf [pacedPaths]Path
	own, others = paced(own, others, buf[:0])
	swiftest := Swiftest(own, others)
	if swiftest { // its plan sizes its pipeline only (planned), at its Peak where that is higher (Window)
		plan.Rate = max(plan.Rate, own.upper())
	} else {
		own = plan
	}
	least := min(int64(MinPiece), s.Left)
	size := min(PieceSize(plan), s.Left)
	if own.Queued >= plan.bdp()+pipelinePieces*size {
		return 0
	}
	if own.Guess && len(others) > 0 {
		if own.Queued > 0 {
			return 0
		}
		size = least
		if own.RTT >= PieceSpan {
			size = min(GuessProbe, s.Left)
		}
	}
	var lbuf [pacedPaths]Path
	lown, lothers := lifted(own, others, lbuf[:0], swiftest)
	share := Balance(lown, lothers, s.Left)
	if share <= 0 {
		return 0
	}
	size = min(size, max(share, least))
	if s.Left-size < least { // no sliver left behind (rule 5)
		size = s.Left
	}
	if !swiftest && !farProbe(own) {
		if h := hidden(own, others, s, size); h >= least {
			return h
		}
	}
	size = min(size, s.Window-s.Ahead)
	if size < least {
		return 0
	}
	if swiftest || (s.Lambda <= 1 && Fastest(own, lothers, size)) {
		return size
	}
	rate, _ := othersPath(others)
	rate *= max(s.Lambda, 1)
	// Rule 3: λ × rate × own.Done(size) ≤ room − size, solved for size.
	room := float64(s.Window - s.Ahead)
	start := max(own.RTT.Seconds(), float64(own.Queued)/own.Rate)
	size = min(size, int64((room-rate*start)/(1+rate/own.Rate)))
	if size < least {
		return 0
	}
	// Rule 4.
	if _, sum := othersPath(lothers); own.Done(size) > sum.Done(s.Left) {
		return 0
	}
	return size
}

// unstick is Take's rule 6, for a stripe whose paths are all idle and
// whose rules 1–5 give none of them a piece: the path that would land a
// MinPiece (or all that is left, if less) no later than any other path
// takes it. Balance splits what is left as if into slivers, so near the
// end it gave the swiftest path nothing while paths of a shorter round
// trip would finish first; each of those, its sliver rounded up to
// MinPiece, was refused by the tail rule (4), the others together (their
// shortest round trip, their summed rate) being faster. Nothing was in
// flight to change that: on fake time, the 40/20 + 20/30 (2 %, four
// lanes) + 10/60 mix stalled with its last 11–44 kB unrequested in 19
// runs of 230 until a QUIC keep-alive (every 5 s) moved a lane's RTT,
// 5 to 35 s later (20 MiB in 7.6–37.7 s against 2.55 s, the best path
// alone 4.3 s). The piece lands no later than any other path would land
// it, so it holds the app up no longer than waiting would.
func unstick(own Path, others []Path, s Stripe) int64 {
	least := min(int64(MinPiece), s.Left)
	if s.Left <= 0 || own.Rate <= 0 || own.Queued > 0 || s.Window-s.Ahead < least || !Fastest(own, others, least) {
		return 0
	}
	if slices.ContainsFunc(others, func(o Path) bool { return o.Queued > 0 }) {
		return 0 // what is in flight lands and the rules look again
	}
	return least
}

// Balance is own's share of the left bytes not yet requested when every
// path is to deliver its last byte at the same time T (water-filling):
// each path p starts on new bytes once its queue has drained (Done(0))
// and delivers at its rate until T, and the paths' bytes until T add up
// to left. Paths with a guessed rate are left out (they take one
// probe at a time: Take). A share of 0 or below: the others deliver
// all that is left before own's queue drains. Far from the end every
// share is larger than a piece; near it, pieces of the size of the rates
// left the end to whichever path asked last: on two equal paths one of
// them idled for the last 92 ms of a 1.7 s download, its twin taking the
// last piece behind a queue of 1.2 MB (fake time, 50/20 + 50/20
// Mbit/s/ms, 20 MB).
func Balance(own Path, others []Path, left int64) int64 {
	type flow struct{ start, rate float64 }
	var buf [pacedPaths]flow // on the stack: Take calls Balance for every piece
	flows := append(buf[:0], flow{own.Done(0), own.Rate})
	for _, o := range others {
		if o.Rate > 0 && !o.Guess {
			flows = append(flows, flow{o.Done(0), o.Rate})
		}
	}
	slices.SortFunc(flows, func(a, b flow) int { return cmp.Compare(a.start, b.start) })
	var rate, bytes, end float64 // rate and start-weighted rate of the paths so far; their common end
	for i, f := range flows {
		rate += f.rate
		bytes += f.rate * f.start
		end = (float64(left) + bytes) / rate
		if i+1 == len(flows) || end <= flows[i+1].start {
			break
		}
	}
	return int64(math.Ceil(own.Rate * (end - own.Done(0))))
}

// hidden is the largest piece, up to size, that path own lands before
// the other paths have delivered what they owe (their queues, at their
// summed rate times the stripe's λ). Take asks it only for a path that
// is not the swiftest (which has no other path's queue to hide behind)
// and whose piece is not a far path's probe (farProbe),
// deciding that before it plans a ramping path's rate. Such a
// piece lies behind bytes the app waits for anyway, so it never holds the
// app up, and Take lets it past the reorder window (the exception to its rule 2), within
// MaxWindow and the tail rule. Without it a slower path sat idle while
// the fastest path's queue, sized from a rate estimate that overshot at
// the start (a 150 Mbit/s path measured at up to 33 MB/s), held the
// window full: on the matrix's 10 : 1 mix (150/20 + 15/50) the slow path
// idled for half a second of a 1.2 s download and carried 2–3 % of the
// bytes, not its 9 %.
func hidden(own Path, others []Path, s Stripe, size int64) int64 {
	rate, sum := othersPath(others)
	drain := float64(sum.Queued) / (rate * max(s.Lambda, 1))
	start := max(own.RTT.Seconds(), float64(own.Queued)/own.Rate)
	h := min(size, int64((drain-start)*own.Rate), MaxWindow-s.Ahead)
	if h <= 0 || own.Done(h) > sum.Done(s.Left) {
		return 0
	}
	return h
}

// WindowBound: Take gives own nothing now because of the reorder window
// alone (its rule 2): its pipeline has room for a piece, bytes are left,
// and the window has not. Seen on the fastest path, that is the window
// blocked: the path idles for the pieces ahead of it.
func WindowBound(own Path, s Stripe) bool {
	if s.Left <= 0 || own.Rate <= 0 {
		return false
	}
	size := min(PieceSize(own), s.Left)
	return own.Queued < own.bdp()+pipelinePieces*size && s.Window-s.Ahead < min(int64(MinPiece), s.Left)
}

// Fastest: own delivers size bytes no later than any other path would
// (Take never cuts such a piece for blocking while λ is 1).
func Fastest(own Path, others []Path, size int64) bool {
	for _, o := range others {
		if o.Rate > 0 && own.Done(size) > o.Done(size) {
			return false
		}
	}
	return true
}

// Swiftest: no other path has a higher rate. Its pieces are never cut
// for blocking; another path's are once the stripe has seen pieces block
// (λ > 1), even when it would land a small piece first because the
// swiftest path's pipeline is full: on real sockets a 1 %-lossy path's
// small pieces, taken so, held the window while the fast path waited
// for 13 % of a transfer.
func Swiftest(own Path, others []Path) bool {
	for _, o := range others {
		if o.Rate > own.Rate {
			return false
		}
	}
	return true
}

// lifted is own (swiftest: of the highest rate) and others as the rules
// that share the end judge them (Take's 4, 5 and its fastest exemption):
// the path of the highest rate at what it may deliver (Path.lift), from
// every path's worker alike, so that Balance's shares seen from each path
// agree: where only the slower path's tail rule judged so, the fast
// path's Balance left the last 50 kB to the slower path, which refused
// them, and they waited until both paths were idle (rule 6). A lifted
// other goes into a copy of others in into's array.
func lifted(own Path, others, into []Path, swiftest bool) (Path, []Path) {
	if swiftest {
		return own.lift(), others
	}
	i := 0
	for j, o := range others {
		if o.Rate > others[i].Rate {
			i = j
		}
	}
	into = append(into[:0], others...)
	into[i] = into[i].lift()
	return own, into
}

// othersPath sums the other paths into one: their rate (upper: what
// they may deliver), their queues and the shortest round trip among them.
func othersPath(others []Path) (float64, Path) {
	var sum Path
	for i, o := range others {
		sum.Rate += o.upper()
		sum.Queued += o.Queued
		if i == 0 || o.RTT < sum.RTT {
			sum.RTT = o.RTT
		}
	}
	return sum.Rate, sum
}

// ReinjectMargin is how much sooner a second copy of a piece must land
// than the first is due for it to be requested: less and two paths race
// for the same bytes on noise in the estimates.
const ReinjectMargin = 20 * time.Millisecond

// ReinjectLead: the second copy must land that many times sooner than
// its own estimate says (besides ReinjectMargin). Neither copy's estimate
// counts the pieces its path takes after it, which QUIC interleaves with
// it: on two equal paths a copy estimated at 166 ms took 230, as long as
// the first copy, whose 99.7 % then went for nothing (fake time, 50/20 +
// 50/20 Mbit/s/ms, 20 MB).
const ReinjectLead = 1.5

// Reinject: should path own request again the size-byte piece that holds
// the window, which its first path is due to deliver in due seconds? Yes
// when own would land it ReinjectLead times and ReinjectMargin sooner.
func Reinject(own Path, size int64, due float64) bool {
	return own.Rate > 0 && ReinjectLead*own.Done(size)+ReinjectMargin.Seconds() < due
}

// DueInOrder is when a piece with rem bytes still to come on path p
// lands, in seconds from now, while p delivers at its rate: ahead are the
// bytes still to come of the pieces p sends before it. A ct-server that
// advertises it (agent/wire.HdrPieceOrder) sends a path's pieces in the
// order they were asked for, those the app waits on first
// (agent/wire.HdrPiece), so a piece lands once those ahead of it have.
// Counted as QUIC's round-robin sends them (DueRoundRobin), a head the
// path now sends first looked due late, and the paths copied it for
// nothing.
func DueInOrder(p Path, rem int64, ahead []int64) float64 {
	for _, r := range ahead {
		rem += r
	}
	return float64(rem) / p.Rate
}

// DueRoundRobin is DueInOrder where the path's sender does not keep the
// order (a ct-server from before it): rems are the bytes still to come of
// each piece in flight on p, the piece itself included. The pieces of one
// path are streams of one QUIC connection, which sends them round-robin,
// a packet each in turn, so a piece's last byte comes once every piece
// ahead of it has delivered as much (or all it has left): Σ min(rems[i],
// rem) bytes at p's rate. Counting its own bytes alone at the path's
// rate, from its request on, a head piece requested behind others looked
// due long before it was, and its second copy on the other path of two
// equal ones was requested and lost every time (fake time, 50/20 + 50/20
// Mbit/s/ms, 20 MB: 13 copies, 1.4 MB or 7 % of the bytes, none of them
// first).
func DueRoundRobin(p Path, rem int64, rems []int64) float64 {
	var ahead int64
	for _, r := range rems {
		ahead += min(r, rem)
	}
	return float64(max(ahead, rem)) / p.Rate
}

// StallRounds is how many of a path's round trips it may deliver nothing
// of a stripe that has bytes on it before Stalled says so: a round trip
// for a request to come back and another for a loss's retransmission.
const StallRounds = 2

// Stalled: path p, with bytes of the stripe in flight, has delivered none
// for quiet seconds: longer than StallRounds round trips and
// ReinjectMargin. Its pieces then come when it recovers, if it does, and
// Due no longer says when.
func Stalled(p Path, quiet time.Duration) bool {
	return quiet > StallRounds*p.RTT+ReinjectMargin
}

// Start-up. A slower path's first piece is a probe (Take), and a
// delivery rate measured from bytes the stripe asked for grows only by
// what it asked: a 15 Mbit/s path 125 ms away read 0.2 MB/s of its 1.9
// from its probe, was given pieces in proportion to that and read 0.65
// and 1.06 MB/s after 0.6 and 1.1 s, so a download of 1.4 s ended before
// it carried its share (2–4 % of the bytes instead of 9 %: the matrix's
// 10 : 1 with 2.5× the RTT, 0.95–0.98 × the best path alone). While its
// samples grow, Take plans such a path at StartupGain times its estimate,
// so what it is asked for doubles per round trip as a TCP or BBR start-up
// does, until its delivery stops growing (Ramp: BBR's full-bandwidth
// test; Cardwell et al., ACM Queue 2016).
const (
	// StartupGain is the factor on a ramping path's rate for its own
	// requests: it is asked for twice what it delivered per round trip
	// (TCP's slow start doubles per round trip too). A piece so planned
	// lands late only once the estimate is above half the true rate, and
	// then takes at most twice as long as planned; the start-up ends
	// soon after (Ramp), and the blocking rules' λ covers the rest. BBR's
	// 2/ln 2 doubled a late piece's lateness in TestRateEstStartupRamp's
	// replay (204 against 108 ms) for 3 % more bytes.
	StartupGain = 2
	// FullGrowth: a round whose rate grew by less than this factor
	// does not count as growth (BBR's 25 %).
	FullGrowth = 1.25
	// FullRounds is how many round trips in a row without such growth
	// end the start-up (BBR: 3; here 2, since an overshoot
	// costs a slower path's pieces held behind, and a round of a slow
	// path is a tenth of a download of seconds).
	FullRounds = 2
	// RampRounds: a start-up that doubles for this many of the path's
	// round trips has grown its plan eightfold, about the tenth of its
	// rate a probe reads (the matrix's 10 : 1 with 2.5× the RTT); one in
	// a download the other paths end sooner cannot pay (planned). With
	// 5 the matrix's 20 MB download would stop ramping 0.44 s in, after
	// 3.5 of the slow path's round trips.
	RampRounds = 3
	// QueueRise: a path whose smoothed round trip has risen by more
	// than 1/QueueRise of its least (Queuing) delivers at its rate, and
	// the bytes its sender adds queue at its bottleneck (HyStart's delay
	// test; Ha and Rhee, Computer Networks 2011: an eighth, clamped to
	// 4–16 ms, which a sixteenth of the 150–300 ms where planned ramps a
	// path about meets). Its start-up ends there: its estimate, bytes
	// over four round trips, keeps growing for rounds after the path is
	// at its rate, and a far path planned at twice its last round for
	// those rounds overfilled its queue and lost packets every few round
	// trips (98 Mbit/s / 295 ms beside three paths of 13–18 Mbit/s,
	// 56 MB, fake time: 6.79–6.85 s, 5.85–6.07 without the start-up,
	// 5.65–5.73 with it ending at an eighth). At an eighth the sweep's
	// 180 cold mixes ran > 3 % slower than without the start-up in 16,
	// at a sixteenth in 12 (8 between two runs of the same code;
	// farramp63).
	QueueRise = 16
)

// pacedPaths: take (for paced) and Balance keep that many paths' copies
// on their stacks, so a piece's decision allocates nothing; a stripe of
// more paths (the sweep's mixes have up to four) allocates per call.
const pacedPaths = 8

// Queuing: the path's round trip rtt has risen by more than 1/QueueRise
// over least, the least it was seen at.
func Queuing(rtt, least time.Duration) bool { return least > 0 && rtt > least+least/QueueRise }

// planned is own as Take plans its requests: at StartupGain times its
// rate, or its last round trip's (Path.Last) if higher, while it ramps
// (Path.Ramping), if it has company and its round trip is at least
// PieceSpan. The swiftest path's plan sizes only its pipeline (rule 1;
// take): its pieces are never cut, and planned at twice its rate in
// Balance it took the end's last pieces late. Its estimate, bytes over
// four round trips, averages a slow start that doubles each round to
// about half its last round, so fed a pipeline of it a far fast path
// grew 1.3–1.5× per round trip, not 2× (137 Mbit/s / 277 ms beside
// 9 / 12, 13 MB: 1.28 × the time on it alone, 1.03 so; farramp62).
// On a shorter round trip the two pieces of its pipeline (two
// PieceSpans of its estimate) are more than its round trip's worth, so
// its samples measure it up by themselves; there the start-up only
// overshot: the 6 : 3 : 1 mix (10 / 20 / 60 ms) fell from 0.92–0.93 of
// the summed rate to 0.83–0.92, and to 0.88–0.93 with the start-up
// ending when the path falls behind (fake time, 10–12 runs each).
//
// Nor while the others deliver what is left (left bytes) in fewer than
// RampRounds of its round trips: the start-up pays off only once the
// path has grown into its rate, and a doubled plan near the end only
// lands pieces late. 100 Mbit/s / 10 ms beside 2 Mbit/s / 200 ms for
// 8 MB (TestStripeUselessPathCostsLittle) took 1.02–1.06 × the time
// alone in 3 of 10 runs (medians of 3) with the start-up, 0.997–1.009
// in 10 of 10 with this rule.
func planned(own Path, others []Path, left int64) Path {
	if own.Ramping && !own.Guess && len(others) > 0 && own.RTT >= PieceSpan && rampPays(own, others, left) {
		own.Rate = StartupGain * max(own.Rate, own.Last)
	}
	return own
}

// paced is own and others with the swiftest path, while it ramps on a
// round trip of PieceSpan or more, rated at twice its last round trip's
// rate (Path.Last: a slow start doubles each round) where that is higher,
// for the rules that share the bytes between the paths (Balance, hidden,
// 3 and 4) and for its pipeline (Take's rule 1) near the end, where
// planned no longer ramps it. Its estimate averages a slow start to about
// a quarter of that, so rated at it the far fast path's share of the end
// went to the slower paths, and it idled while they drained it. Not past
// its start-up: rated so at its last round then (no gain), the 88 Mbit/s
// / 173 ms path beside two near ones lost packets every few round trips
// after it and took 32 MB in 3.48 s, 3.26 without (fake time; farramp63).
// Take calls it for every piece of every path, so it allocates nothing: a
// lifted other path goes into a copy of others in into's array (take's, on
// its stack), grown only past its capacity.
func paced(own Path, others, into []Path) (Path, []Path) {
	if len(others) == 0 {
		return own, others
	}
	if rate, ok := pacedRate(own); ok && Swiftest(own, others) {
		own.Rate = rate
		return own, others
	}
	for i, o := range others {
		// Swiftest among own and the others: o's own rate is no rival.
		if rate, ok := pacedRate(o); ok && o.Rate >= own.Rate && Swiftest(o, others) {
			into = append(into[:0], others...)
			into[i].Rate = rate
			return own, into
		}
	}
	return own, others
}

// pacedRate is p's rate as paced rates it, twice its last round trip's,
// and whether paced may: p ramps, on a round trip of PieceSpan or more,
// and that is above its estimate.
func pacedRate(p Path) (float64, bool) {
	last := StartupGain * p.Last
	return last, p.Ramping && !p.Guess && p.RTT >= PieceSpan && last > p.Rate
}

// rampPays: the other paths need at least RampRounds of own's round
// trips to deliver left bytes.
func rampPays(own Path, others []Path, left int64) bool {
	rate, _ := othersPath(others)
	return rate > 0 && float64(left)/rate >= RampRounds*own.RTT.Seconds()
}

// Ramp is a path's start-up in one stripe, after BBR's full-bandwidth
// test: the path ramps until FullRounds of its round trips in a row each
// raised its delivery rate by less than FullGrowth over the last round
// that did grow, or at once when such a round finds it behind what it was
// asked for (its queue, not the stripe, limits it: it is at its rate, and
// planned at twice that its pieces would land late and hold the window).
// Not a round that grew: a far path in slow start is asked for more than
// its sender's window can double into (its pipeline, two pieces and a
// round trip at twice its last round, is over three of its last rounds'
// delivery), so it is behind while it doubles: 100 Mbit/s / 292 ms beside
// 26 / 47 (1.3 % lossy) fell behind delivering 0.83 MB/s of its 12.5,
// ended there, grew 1.2–1.5× per round trip after, and 35 MB took
// 1.12–1.15 × the time on it alone (the sweep's seed 7 #13, fake time;
// 0.92–0.93 × so). As in BBR, the rate tested is the path's per-round
// delivery (Path.Last, or the estimate where that is higher), and a round
// in which the path delivered all it had been asked for before the round
// began (limited: the stripe, not the path, set what it carried) is no
// test at all. Each of the two alone ended far paths' start-ups a few
// round trips in: the estimate, bytes over a span of four round trips that
// starts with the probe's round trip, in which nothing arrives, lags a
// slow start to under half its last round, and the round after the probe
// carried the probe's tail and nothing else (the next pieces were asked
// for once the probe had been measured, a round trip before they could
// arrive). So 154 Mbit/s / 209 ms and 96 / 187 beside 19 / 80 read 124 and
// 139 kB/s, then 86 and 97 (delivering 40–46 kB/s in that round), then 148
// and 165 (290–320 kB/s): two rounds without 25 % over the first, and the
// start-up ended with the paths at about a hundredth of their rates; asked
// for their estimates, they grew 1.3–1.5× per round trip, and 11 MB
// striped took 2.38 s against 2.04 on the fast path alone in 4 runs of 6
// (the sweep's seed 3 #57, fake time). An early end is not cheap: a path's
// estimate, measured from what it was asked, grows only as fast as the
// asks do.
type Ramp struct {
	Full bool    // the start-up ended: the estimate is the path's rate
	base float64 // the rate after the last round that grew
	flat int     // rounds since then without growth
}

// Round is the ramp after one more round trip of the path in which it
// delivered bytes, its rate now rate (the larger of its estimate and its
// last round's delivery); behind: bytes it was asked for two round trips
// ago or earlier are still on their way (the end only of a round that
// did not grow); limited: it delivered all it was asked for before this
// round began, so the round shows what it was asked, not its rate.
func (r Ramp) Round(rate float64, behind, limited bool) Ramp {
	switch {
	case r.Full, limited:
	case rate >= r.base*FullGrowth:
		r.base, r.flat = rate, 0
	case behind:
		r.Full = true
	default:
		r.flat++
		r.Full = r.flat >= FullRounds
	}
	return r
}

// A path's rate may fall in the middle of a download (a radio's rate
// steps down, another flow takes half a link), and an estimate that
// remembers the path's bytes over its span (agent/stripe's rateEst) reads
// it high for a few hundred ms after: the path stays the one whose pieces
// are never cut, Balance gives it the share of a path twice or four times
// as fast, and the stripe's last pieces wait on it while the other paths
// idle. Dropped tests the path's delivery over a shorter, recent window
// against the estimate.
const (
	// DropBelow: a recent rate under this fraction of the estimate is a
	// drop, not noise. A 2× drop reads so once it fills 0.6 of the
	// window, a 4× one at 0.4.
	DropBelow = 0.7
	// DropSpan and DropRounds: the recent window is the longer of
	// DropSpan and DropRounds of the path's round trips: a few bursts of
	// the path's bytes, which arrive a round trip's worth at a time.
	DropSpan   = 100 * time.Millisecond
	DropRounds = 2
	// dropQueues: the path held at least this many of its queue-free
	// round trips (Dropped) of bytes at its recent rate, so its link,
	// not the stripe, set that rate (a path asked for too little has its
	// bottleneck's queue empty and delivers about its queue per such
	// round trip, whatever its rate).
	dropQueues = 2
)

// DropWindow is the recent window of a path of round trip rtt (Dropped).
func DropWindow(rtt time.Duration) time.Duration { return max(DropSpan, DropRounds*rtt) }

// Dropped: a path estimated at rate that delivered at recent over its
// last DropWindow, and still owes queued bytes, has fallen below its
// estimate: recent is under DropBelow of it, and the path holds at
// least dropQueues round trips of bytes at recent (its queue did not
// limit it), round trips without its bottleneck's queue (QueueFree of
// its smoothed rtt and its least): bytes owed beyond what the link
// holds in flight wait at its sender or its bottleneck, which then
// delivers at the link's rate. The smoothed round trip counts that
// bottleneck's queue, which the stripe's pipeline fills before any drop
// and a drop lengthens (the queue drains at the new rate), so measured
// by it a path that had fallen read as asked for too little: on
// 100/20 + 50/30 Mbit/s/ms whose first path halves at 1 s (fake time,
// TestStripeFollowsRateChange's halving row), 140 ms after the drop it
// delivered 0.62 of its estimate and owed 406 kB, 1.8 of its smoothed
// round trips (38 ms) at that rate but 6.7 of its least (10 ms); the
// test never held, and trim left the rest on it (trimfall29).
func Dropped(rate, recent float64, queued int64, rtt, least time.Duration) bool {
	return recent > 0 && recent < DropBelow*rate && float64(queued) >= dropQueues*recent*QueueFree(rtt, least).Seconds()
}

// QueueFree is a path's round trip without its bottleneck's queue: the
// least round trip of its connection, least, where known (> 0), else
// its smoothed rtt. The smoothed round trip of a path also counts the
// queue the stripe's own pieces built at its bottleneck, and stays at
// it once the path idles, for it then has no samples: 3–6 times the
// least on the matrix's rows (fake time).
func QueueFree(rtt, least time.Duration) time.Duration {
	if least <= 0 || (rtt > 0 && rtt < least) {
		return rtt
	}
	return least
}

// Trim is how many of the left bytes the original stream still owes
// (on path orig, whose bytes already flow: no round trip, no queue ahead
// of them) path own should take from their far end, 0 for none: own's
// share when it, orig and the stripe's other paths (others, orig's
// and own's left out) are to finish together (Balance), where moving
// it ends the original at least ReinjectMargin sooner and it is
// MinPiece or more. Each idle path takes its own share in turn, so the
// order in which they ask does not decide the shares: with orig alone
// as the balance (and every path judged at its least round trip:
// agent/stripe's trim), the slowest of three paths, idle first, took 2/3 of
// the rest of a first path fallen 8× (0.98 of 1.56 MB, 0.39 s at its
// 2.5 MB/s) and the middle one, twice as fast, the rest of what was
// left (fake time, 80/10 + 40/30 + 20/60 Mbit/s/ms, the first dropping
// 8× at 1 s: 0.871–0.877 of the offered sum in 2 runs of 4, 0.93–0.96
// where the middle path asked first; trimfall29). Reinject moves the original's whole rest or nothing, and only
// where own lands all of it ReinjectLead times sooner: a path that
// extended the original as its share and then fell 4× kept ~2 MB to
// deliver at its new rate while the other paths, with nothing left to
// take, idled (fake time, 80/10 + 40/30 + 20/60 Mbit/s/ms, the first
// dropping 4× at 1 s: 0.82 of the offered sum).
func Trim(orig, own Path, others []Path, left int64) int64 {
	if orig.Rate <= 0 || own.Rate <= 0 || own.Guess || left <= 0 {
		return 0
	}
	orig.RTT, orig.Queued = 0, 0
	moved := min(max(Balance(own, slices.Concat(others, []Path{orig}), left), 0), left)
	if moved < MinPiece || float64(moved)/orig.Rate < ReinjectMargin.Seconds() {
		return 0
	}
	return moved
}

// Owed is one piece a path still owes: its size and the bytes of it
// still to come.
type Owed struct{ Size, Left int64 }

// Unload is how many of the pieces path slow still owes (owed, in the
// order it sends them, its bytes already flowing: no round trip) an idle
// path own should request again from their far end, 0 for none, once
// every byte of the stripe is requested: the count that ends both paths
// soonest, where own lands those pieces ReinjectMargin sooner than slow,
// which sends them last. Not ReinjectLead: no piece is taken after the
// copies, on either path, to share it with them. A copy is of a whole
// piece: own's request cannot start at the bytes slow already sent.
// slow.Rate 0 (it delivers nothing now): it lands nothing alone.
// Reinject moves the head piece only, judged at slow's estimate, which
// lags a drop by up to its span: a 50 Mbit/s path that fell 5× at 1 s
// of ~1.2 kept ~330 kB of pieces while the 100 Mbit/s path, with
// nothing left to take, idled from ~1.1 s to ~1.3 (fake time,
// 100/20 + 50/30 Mbit/s/ms: 0.873 of the offered sum).
func Unload(slow, own Path, owed []Owed) int {
	if own.Rate <= 0 || own.Guess {
		return 0
	}
	alone := Landed(slow, owed)
	best, end := 0, alone
	var moved int64
	for k := 1; k <= len(owed); k++ {
		moved += owed[len(owed)-k].Size
		if own.Done(moved)+ReinjectMargin.Seconds() >= alone {
			continue
		}
		if e := max(Landed(slow, owed[:len(owed)-k]), own.Done(moved)); e < end {
			best, end = k, e
		}
	}
	return best
}

// Landed is when path p, its bytes flowing, lands the last of owed, in
// seconds from now: +Inf where it delivers nothing (Rate 0).
func Landed(p Path, owed []Owed) float64 {
	var left int64
	for _, o := range owed {
		left += o.Left
	}
	if left <= 0 {
		return 0
	}
	return float64(left) / p.Rate
}

// farProbe: own's rate is a guess and its round trip PieceSpan or more,
// so its probe is a GuessProbe, which hidden does not cut (Take): taken
// from the object's far end (agent/stripe's take), it holds no byte the
// app waits on, and cut to what lands before the other paths drain their
// queues it was under the initial window again. 100 Mbit/s / 200 ms
// beside 12 / 60 so probed with 38 kB, which its first round trip carried
// whole: the pieces asked once it was measured came a round trip later,
// and the round between carried 3.5 kB (fake time). 120 / 300 beside
// 20 / 120 took 12 MB in 1.013 × the time on the far path alone, 0.980 ×
// with the whole probe (TestStripeFarFastPathRampsAsAlone), and the
// sweep's seed 3 #57 (154/209 + 19/80 + 96/187, 11 MB) 1.78–1.88 s
// striped, 1.68–1.70 so.
func farProbe(own Path) bool { return own.Guess && own.RTT >= PieceSpan }
