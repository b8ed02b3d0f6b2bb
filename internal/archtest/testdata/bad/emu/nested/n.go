package nested

import _ "example.com/m/pcm"
