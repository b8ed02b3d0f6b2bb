package pathsel

import "time"

var Now = time.Now
