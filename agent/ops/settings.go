package ops

import "reflect"

// Reloading: which settings of a configuration file changed, so that the
// command can say which of them need a restart.

// Setting is one configuration field's name and its value in two files.
type Setting struct {
	Name string
	A, B any
}

// Changed names the settings whose two values differ.
func Changed(settings []Setting) []string {
	var names []string
	for _, x := range settings {
		if !reflect.DeepEqual(x.A, x.B) {
			names = append(names, x.Name)
		}
	}
	return names
}
