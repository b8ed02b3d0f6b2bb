package sim

import _ "example.com/m/pcm"
