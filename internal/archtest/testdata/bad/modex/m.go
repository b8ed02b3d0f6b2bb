package modex

import _ "example.com/m/internal/mode"
