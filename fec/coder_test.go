package fec

import (
	"errors"
	"fmt"

	"github.com/klauspost/reedsolomon"
)

// The real coder the k-of-n model is held against (fec_test.go): what a
// client that sent real frames would run.

// encode returns the block's N shards: the K source payloads (padded to
// equal length with zeros) followed by N − K Reed–Solomon repair shards.
func encode(b Block, src [][]byte) ([][]byte, error) {
	if len(src) != b.K {
		return nil, fmt.Errorf("fec: %d payloads for a block of k = %d", len(src), b.K)
	}
	size := 0
	for _, s := range src {
		size = max(size, len(s))
	}
	if size == 0 {
		return nil, errors.New("fec: empty payloads")
	}
	shards := make([][]byte, b.N)
	for i := range shards {
		shards[i] = make([]byte, size)
		if i < b.K {
			copy(shards[i], src[i])
		}
	}
	if b.N == b.K {
		return shards, nil
	}
	enc, err := reedsolomon.New(b.K, b.N-b.K)
	if err != nil {
		return nil, fmt.Errorf("fec: %w", err)
	}
	if err := enc.Encode(shards); err != nil {
		return nil, fmt.Errorf("fec: %w", err)
	}
	return shards, nil
}

// reconstruct recovers the source shards in place: shards has N entries,
// nil for a lost packet. It returns ErrTooFewShards (and leaves the lost
// source shards nil) when fewer than K arrived.
func reconstruct(b Block, shards [][]byte) error {
	if len(shards) != b.N {
		return fmt.Errorf("fec: %d shards for a block of %d", len(shards), b.N)
	}
	if b.N == b.K {
		for _, s := range shards {
			if s == nil {
				return ErrTooFewShards
			}
		}
		return nil
	}
	enc, err := reedsolomon.New(b.K, b.N-b.K)
	if err != nil {
		return fmt.Errorf("fec: %w", err)
	}
	if err := enc.ReconstructData(shards); err != nil {
		if errors.Is(err, reedsolomon.ErrTooFewShards) {
			return ErrTooFewShards
		}
		return fmt.Errorf("fec: %w", err)
	}
	return nil
}

// ErrTooFewShards: fewer than K of a block's N packets arrived.
var ErrTooFewShards = errors.New("fec: too few shards to reconstruct")
