// Package ops is what the agent shows its operator, the same for ct-client
// and ct-server: the Prometheus plumbing of both ends' registries (a
// collector read at scrape time, the latency buckets, /metrics and /healthz),
// "hetquic agent status" read back from that text, and systemd's sd_notify.
// It is apart from both ends because it knows neither: the command and the
// abuse harness read a running agent's metrics through it.
package ops
