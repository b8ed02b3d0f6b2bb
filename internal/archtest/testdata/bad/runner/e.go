package runner

import _ "example.com/m/sim"
