package citest

import (
	"testing"
)

// fakeTB records what Skip did instead of stopping a real test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skip(...any)           { f.skipped = true }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }

func TestSkipFailsUnderCI(t *testing.T) {
	for _, c := range []struct {
		env          string
		skip, failed bool
	}{{"", true, false}, {"0", true, false}, {"1", false, true}} {
		t.Setenv(Env, c.env)
		f := &fakeTB{}
		Skip(f, "no TUN")
		if f.skipped != c.skip || f.failed != c.failed {
			t.Errorf("%s=%q: skipped %v failed %v, want %v %v", Env, c.env, f.skipped, f.failed, c.skip, c.failed)
		}
		f = &fakeTB{}
		Require(f, "curl", true)
		if f.skipped || f.failed {
			t.Errorf("%s=%q: Require with ok stopped the test", Env, c.env)
		}
	}
}
