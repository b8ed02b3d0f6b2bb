package runner

import (
	"bytes"
	"strings"
	"testing"
)

// The terminal table names every column's unit.
func TestWriteTextUnits(t *testing.T) {
	var b bytes.Buffer
	if err := writeText(&b, []Summary{{Label: "MAMS", GoodputMbps: 8.14}}); err != nil {
		t.Fatal(err)
	}
	header := strings.Fields(strings.SplitN(b.String(), "\n", 2)[0])
	for _, col := range header[2:] {
		if col != "unfin" && !strings.HasSuffix(col, "_Mbps") && !strings.HasSuffix(col, "_s") && !strings.HasSuffix(col, "_ms") && !strings.HasSuffix(col, "_%") {
			t.Errorf("column %q has no unit", col)
		}
	}
}
