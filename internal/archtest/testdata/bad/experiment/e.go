package experiment

import _ "example.com/m/sim"
