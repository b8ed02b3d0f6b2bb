package sweep

import (
	"fmt"
	"strings"
	"text/template"
)

// SlurmJob is what `hetquic exp slurm` writes a job-array script for.
type SlurmJob struct {
	Spec   string // experiment name or file, as given to hetquic exp run
	Shards int    // array size: one task per shard
	Out    string // results directory; shards go to Out/shards/NNNNN
	Binary string // hetquic as the compute nodes see it
	// Optional #SBATCH settings; empty ones are left to the site's defaults.
	Partition string
	Time      string // wall-time limit per shard, as sbatch takes it (e.g. 00:30:00)
	MemMB     int
}

// slurmTmpl is a job array with one task per shard. The script is also its
// own merge step: submitted with MERGE=1 (done by the dependency line printed
// in its header), it joins the shards. Everything in it is quoted for the
// shell; Slurm reads only the #SBATCH lines.
var slurmTmpl = template.Must(template.New("slurm").Parse(`#!/bin/bash
# hetquic sweep of {{.Spec}} as a Slurm job array: {{.Shards}} shards.
# Save it as SCRIPT and submit both steps (the merge waits for every shard):
#   mkdir -p {{.QOut}}/slurm
#   jid=$(sbatch --parsable SCRIPT)
#   sbatch --dependency=afterok:$jid --export=ALL,MERGE=1 --array=0 SCRIPT
# Every shard writes its own directory, so a shard that is re-run replaces its
# files, and hetquic exp merge checks that together they hold every run once.
#SBATCH --job-name=hetquic-{{.Name}}
#SBATCH --array=0-{{.Last}}
#SBATCH --cpus-per-task=1
#SBATCH --output={{.Out}}/slurm/%A_%a.log
{{- if .Partition}}
#SBATCH --partition={{.Partition}}
{{- end}}
{{- if .Time}}
#SBATCH --time={{.Time}}
{{- end}}
{{- if .MemMB}}
#SBATCH --mem={{.MemMB}}M
{{- end}}
set -euo pipefail
hetquic={{.QBinary}}
out={{.QOut}}
if [ "${MERGE:-0}" = 1 ]; then
  exec "$hetquic" exp merge --out "$out" "$out"/shards/*
fi
i=${SLURM_ARRAY_TASK_ID:?run this script with sbatch (or set SLURM_ARRAY_TASK_ID)}
shard=$(printf '%05d' "$i")
mkdir -p "$out/shards"
tmp="$out/shards/.$shard.$$"
rm -rf "$tmp"
"$hetquic" exp run {{.QSpec}} --shard "$i/{{.Shards}}" --workers 1 --quiet --out "$tmp"
rm -rf "$out/shards/$shard"
mv "$tmp" "$out/shards/$shard"
`))

// Slurm renders the job-array script.
func Slurm(j SlurmJob) (string, error) {
	if j.Shards < 1 {
		return "", fmt.Errorf("--shards %d: need at least 1", j.Shards)
	}
	if j.Spec == "" || j.Out == "" || j.Binary == "" {
		return "", fmt.Errorf("slurm: spec, out and binary are required")
	}
	for _, s := range []string{j.Partition, j.Time} {
		if strings.ContainsAny(s, " \n\t'\"$`\\") {
			return "", fmt.Errorf("slurm: %q: no spaces, quotes or shell characters in #SBATCH values", s)
		}
	}
	if strings.ContainsAny(j.Out, " \t\n%") {
		return "", fmt.Errorf("slurm: --out %q: no spaces or %% (#SBATCH lines split on spaces, and Slurm expands %%)", j.Out)
	}
	name := j.Spec[strings.LastIndexByte(j.Spec, '/')+1:]
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".yml")
	var b strings.Builder
	err := slurmTmpl.Execute(&b, map[string]any{
		"Spec": j.Spec, "Shards": j.Shards, "Last": j.Shards - 1, "Out": j.Out,
		"Name": name, "Partition": j.Partition, "Time": j.Time, "MemMB": j.MemMB,
		"QBinary": shellQuote(j.Binary), "QOut": shellQuote(j.Out), "QSpec": shellQuote(j.Spec),
	})
	return b.String(), err
}

// shellQuote quotes s for bash: single quotes, with each ' written as '\”.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
