package pcm

import _ "github.com/quic-go/quic-go"
