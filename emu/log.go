package emu

import (
	"bufio"
	"io"
	"strconv"
	"sync"

	"github.com/hetquic/hetquic/internal/stats"
)

// CSVLog writes one CSV line per packet event:
//
//	t_ms,path,dir,event,cause,size_bytes,queue_delay_ms,delay_ms
//
// t_ms is engine time (since start); queue_delay_ms and delay_ms are filled
// for "out" events. It buffers; call Flush (or Close) at the end.
type CSVLog struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	err error
}

// CSVHeader is the first line CSVLog writes.
const CSVHeader = "t_ms,path,dir,event,cause,size_bytes,queue_delay_ms,delay_ms\n"

// NewCSVLog writes the header to w and returns the log.
func NewCSVLog(w io.Writer) *CSVLog {
	l := &CSVLog{w: bufio.NewWriterSize(w, 64<<10)}
	_, l.err = l.w.WriteString(CSVHeader)
	return l
}

// Record implements EventLog.
func (l *CSVLog) Record(ev PacketEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	b := l.buf[:0]
	b = strconv.AppendFloat(b, stats.Ms(ev.At), 'f', 3, 64)
	b = append(b, ',')
	b = append(b, ev.Path...)
	b = append(b, ',')
	b = append(b, ev.Dir.String()...)
	b = append(b, ',')
	b = append(b, ev.Kind...)
	b = append(b, ',')
	b = append(b, ev.Cause.String()...)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(ev.Size), 10)
	b = append(b, ',')
	if ev.Kind == EventOut {
		b = strconv.AppendFloat(b, stats.Ms(ev.QueueDelay), 'f', 3, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, stats.Ms(ev.Delay), 'f', 3, 64)
	} else {
		b = append(b, ',')
	}
	b = append(b, '\n')
	l.buf = b
	_, l.err = l.w.Write(b)
}

// Flush writes buffered lines and returns the first write error.
func (l *CSVLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.err = l.w.Flush()
	return l.err
}
