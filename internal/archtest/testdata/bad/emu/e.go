package emu

import _ "example.com/m/cmd/x"
