package emu

import (
	"encoding/json"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
)

// LinkStats are the counters of one direction of one path since the engine
// started. Every packet that enters is, eventually, exactly one of: out,
// dropped (by one cause), or still held.
type LinkStats struct {
	PacketsIn  uint64 `json:"packets_in"`
	BytesIn    uint64 `json:"bytes_in"`
	PacketsOut uint64 `json:"packets_out"`
	BytesOut   uint64 `json:"bytes_out"`
	Dropped    Drops  `json:"dropped"`
	// QueuedPackets and QueuedBytes are in the rate limiter's queue now
	// (waiting or being serialised); Held counts every packet in the link
	// (queued or in propagation).
	QueuedPackets int  `json:"queued_packets"`
	QueuedBytes   int  `json:"queued_bytes"`
	Held          int  `json:"held_packets"`
	Outage        bool `json:"outage"`
	// QueueDelay is the time from arrival to leaving the rate limiter
	// (waiting plus serialisation) of every admitted packet; Delay the total
	// time in the link of every delivered packet.
	QueueDelay DurStats `json:"queue_delay"`
	Delay      DurStats `json:"delay"`
}

// Drops counts dropped packets by cause (index: Cause).
type Drops [numCauses]uint64

// Total is the number of dropped packets.
func (d Drops) Total() uint64 {
	var n uint64
	for _, v := range d {
		n += v
	}
	return n
}

type dropsJSON struct {
	Loss      uint64 `json:"loss"`
	Queue     uint64 `json:"queue"`
	Outage    uint64 `json:"outage"`
	Malformed uint64 `json:"malformed"`
}

// MarshalJSON writes {"loss": n, "queue": n, "outage": n, "malformed": n}.
func (d Drops) MarshalJSON() ([]byte, error) {
	return json.Marshal(dropsJSON{d[CauseLoss], d[CauseQueue], d[CauseOutage], d[CauseMalformed]})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Drops) UnmarshalJSON(b []byte) error {
	var j dropsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*d = Drops{}
	d[CauseLoss], d[CauseQueue], d[CauseOutage], d[CauseMalformed] = j.Loss, j.Queue, j.Outage, j.Malformed
	return nil
}

// DurStats summarises a set of durations.
type DurStats struct {
	Count uint64
	Sum   time.Duration
	Max   time.Duration
}

func (s *DurStats) add(d time.Duration) {
	s.Count++
	s.Sum += d
	s.Max = max(s.Max, d)
}

// Mean is the average (0 with no samples).
func (s DurStats) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / time.Duration(s.Count)
}

type durJSON struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// MarshalJSON writes {"count": n, "mean_ms": x, "max_ms": x}.
func (s DurStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(durJSON{s.Count, stats.Ms(s.Mean()), stats.Ms(s.Max)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *DurStats) UnmarshalJSON(b []byte) error {
	var j durJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	s.Count, s.Max = j.Count, stats.DurationMs(j.MaxMs)
	s.Sum = stats.DurationMs(j.MeanMs) * time.Duration(j.Count)
	return nil
}

// PathStats are the counters of both directions of one path.
type PathStats struct {
	Name string    `json:"name"`
	Up   LinkStats `json:"up"`
	Down LinkStats `json:"down"`
}
