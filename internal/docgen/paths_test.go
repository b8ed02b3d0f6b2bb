package docgen

import (
	"reflect"
	"strings"
	"testing"
)

// repo is the fake repository the path tests resolve against.
var repo = map[string]bool{
	"README.md": true, "docs/claims.md": true, "sim/README.md": true, "sim/DESIGN.md": true,
	"sim/topo/topologies/abilene.yaml": true, "qcmab/figures/fig.png": true,
}

func inRepo(p string) bool { return repo[p] }

// TestPaths: each way a doc names a file, resolved against the doc's
// directory and the repository root; patterns, outputs, URLs, code and
// generated blocks are not names.
func TestPaths(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      []Missing
	}{
		{"docs/x.md", "see [claims](claims.md) and [top](../README.md#quick-start)\n", nil},
		{"docs/x.md", "see [gone](gone.md)\n", []Missing{{1, "gone.md", "no such file"}}},
		{"sim/x.md", "line\n[design](DESIGN.md#scale), [res](RESULTS.md)\n", []Missing{{2, "RESULTS.md", "no such file"}}},
		{"x.md", "![fig](qcmab/figures/fig.png) ![no](qcmab/figures/none.png)\n", []Missing{{1, "qcmab/figures/none.png", "no such file"}}},
		{"x.md", "[web](https://example.org/a.md) [here](#anchor) [mail](mailto:a@b)\n", nil},
		{"ARCHITECTURE.md", "`../shared/DESIGN.md` proposed it\n", []Missing{{1, "../shared/DESIGN.md", "outside the repository"}}},
		{"docs/x.md", "[up](../../x.md)\n", []Missing{{1, "../../x.md", "outside the repository"}}},
		// a code span resolves from the doc's directory or from the root
		{"sim/README.md", "`topo/topologies/abilene.yaml` and `sim/topo/topologies/abilene.yaml`\n", nil},
		{"sim/README.md", "ships `topologies/abilene.yaml`\n", []Missing{{1, "topologies/abilene.yaml", "no such file"}}},
		// not file names: no slash, no extension, patterns, outputs, absolute paths
		{"x.md", "`go.mod` `exp run` `sim/runner` `results/index.md` `results/NAME/report.md` `runs/LABEL_goodput.csv` `experiments/*.yaml` `sim-abilene-{10,20}mb.yaml` `/dev/net/tun.txt` `points/ID/summary.json`\n", nil},
		// fenced code and generated blocks are not prose
		{"x.md", "```sh\ncat `gone/a.md` [x](gone.md)\n```\n<!-- gen: hetquic help --md -->\n[x](gone.md)\n```text\n`gone/b.md`\n```\n<!-- /gen -->\n[y](nope.md)\n",
			[]Missing{{10, "nope.md", "no such file"}}},
	} {
		if got := Paths(c.name, c.doc, inRepo); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q:\n got %v\nwant %v", c.name, c.doc, got, c.want)
		}
	}
}

// FuzzPaths: any doc gives line numbers within it and paths it contains.
func FuzzPaths(f *testing.F) {
	f.Add("docs/x.md", "[a](b.md) `c/d.go`\n```\n[e](f.md)\n```\n")
	f.Add("x.md", "<!-- gen: hetquic help -->\n`a/b.md`\n<!-- /gen -->\n[](../x.md)")
	f.Fuzz(func(t *testing.T, name, doc string) {
		lines := strings.Count(doc, "\n") + 1
		for _, m := range Paths(name, doc, inRepo) {
			if m.Line < 1 || m.Line > lines || !strings.Contains(doc, m.Path) || m.Reason == "" {
				t.Fatalf("%+v out of doc %q", m, doc)
			}
		}
	})
}
