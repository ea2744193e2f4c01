package latency

import (
	"testing"
	"time"
)

func TestBucketLayout(t *testing.T) {
	if Highest < time.Hour {
		t.Fatalf("Highest = %v, want at least an hour", Highest)
	}
	if got := bucketOf(uint64(Highest)); got != buckets-1 {
		t.Fatalf("bucketOf(Highest) = %d, want last bucket %d", got, buckets-1)
	}
	// Buckets tile [0, Highest] without gaps or overlaps.
	next := uint64(0)
	for i := range buckets {
		lower, width := bucketRange(i)
		if lower != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lower, next)
		}
		if width > 1 && width*half > lower {
			t.Fatalf("bucket %d: width %d exceeds 1/%d of %d", i, width, half, lower)
		}
		next = lower + width
	}
	if next != uint64(Highest)+1 {
		t.Fatalf("buckets end at %d, want %d", next, uint64(Highest)+1)
	}
}

func FuzzBucketOf(f *testing.F) {
	for _, v := range []uint64{0, 1, 255, 256, 257, 511, 512, 1e6, uint64(Highest)} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v uint64) {
		v %= uint64(Highest) + 1
		i := bucketOf(v)
		if i < 0 || i >= buckets {
			t.Fatalf("bucketOf(%d) = %d out of range", v, i)
		}
		lower, width := bucketRange(i)
		if v < lower || v >= lower+width {
			t.Fatalf("%d not in bucket %d [%d, %d)", v, i, lower, lower+width)
		}
		mid := bucketMid(i)
		diff := max(mid, v) - min(mid, v)
		if diff*256 > v {
			t.Fatalf("midpoint %d of bucket %d is more than 1/256 from %d", mid, i, v)
		}
	})
}
