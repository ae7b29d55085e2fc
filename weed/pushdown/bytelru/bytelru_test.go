package bytelru

import (
	"slices"
	"testing"
	"time"
)

// The cache holds at most its capacity in bytes, evicting the least
// recently used first; Get makes an entry recent, Peek does not; OnEvict
// hears of every entry leaving, whatever removed it.
func TestTheOldestEntriesLeaveWhenTheBytesPassTheCapacity(t *testing.T) {
	var gone []string
	c := New[string, int](100, Options[string, int]{OnEvict: func(k string, _ int) { gone = append(gone, k) }})
	c.Add("a", 1, 40)
	c.Add("b", 2, 40)
	if _, ok := c.Get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	if _, ok := c.Peek("b"); !ok { // b stays the oldest
		t.Fatal("b missing")
	}
	c.Add("c", 3, 40) // 120 > 100: b goes
	if _, ok := c.Peek("b"); ok {
		t.Fatal("b, the least recently used, was kept")
	}
	if s := c.Stats(); s.Entries != 2 || s.Bytes != 80 || s.Evictions != 1 || s.Capacity != 100 {
		t.Fatalf("stats %+v", s)
	}
	c.Add("a", 10, 10) // a replaced: told, 50 bytes now
	c.Remove("c")
	if s := c.Stats(); s.Entries != 1 || s.Bytes != 10 || s.Evictions != 1 {
		t.Fatalf("after replace and remove: %+v", s)
	}
	if want := []string{"b", "a", "c"}; !slices.Equal(gone, want) {
		t.Fatalf("OnEvict heard %v, want %v", gone, want)
	}
}

// An entry larger than the whole cache is not kept (unless KeepOne, which
// keeps the newest alone); Grow resizes an entry and evicts for it.
func TestAnEntryLargerThanTheCacheAndAGrownOne(t *testing.T) {
	c := New[int, string](100, Options[int, string]{})
	c.Add(1, "x", 30)
	if c.Add(2, "huge", 101) {
		t.Fatal("an entry larger than the cache was kept")
	}
	if _, ok := c.Peek(1); !ok {
		t.Fatal("a refused entry evicted the others")
	}
	keep := New[int, string](100, Options[int, string]{KeepOne: true})
	keep.Add(1, "x", 30)
	if !keep.Add(2, "huge", 101) {
		t.Fatal("KeepOne refused the newest entry")
	}
	if s := keep.Stats(); s.Entries != 1 || s.Bytes != 101 {
		t.Fatalf("KeepOne: %+v", s)
	}
	c.Add(3, "y", 30)
	if c.Grow(1, 50, func(v string) bool { return v != "x" }) {
		t.Fatal("Grow of an entry whose value same refused")
	}
	if !c.Grow(1, 50, nil) { // 1 is the oldest: 110 > 100, it goes
		t.Fatal("Grow of a cached entry")
	}
	if _, ok := c.Peek(1); ok {
		t.Fatal("the grown oldest entry was kept over the capacity")
	}
	if c.Grow(42, 1, nil) {
		t.Fatal("Grow of an entry not cached")
	}
	if s := c.Stats(); s.Bytes != 30 || s.Entries != 1 {
		t.Fatalf("after Grow: %+v", s)
	}
}

// With PromoteEvery, a Get within that long of the last move leaves the
// order alone; GetEach looks keys up together; RemoveIf drops a stale one.
func TestPromotionIsThrottledAndStaleEntriesAreDropped(t *testing.T) {
	c := New[string, int](100, Options[string, int]{PromoteEvery: time.Hour})
	c.Add("a", 1, 40)
	c.Add("b", 2, 40)
	c.Get("a") // added just now: not moved
	c.Add("c", 3, 40)
	if _, ok := c.Peek("a"); ok {
		t.Fatal("a Get within PromoteEvery moved the entry")
	}
	var got []int
	if n := c.GetEach(3, func(i int) string { return []string{"b", "x", "c"}[i] }, func(i int, v int) { got = append(got, i*10+v) }); n != 2 || !slices.Equal(got, []int{2, 23}) {
		t.Fatalf("GetEach found %d: %v", n, got)
	}
	if c.RemoveIf("b", func(v int) bool { return v != 2 }) {
		t.Fatal("RemoveIf dropped an entry drop kept")
	}
	if !c.RemoveIf("b", func(v int) bool { return v == 2 }) {
		t.Fatal("RemoveIf kept an entry drop refused")
	}
	if s := c.Stats(); s.Entries != 1 || s.Evictions != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// An entry Stale refuses is missed and dropped; Clear empties the cache
// without counting evictions.
func TestStaleEntriesAreMissedAndClearEmpties(t *testing.T) {
	stale := map[string]bool{}
	c := New[string, int](100, Options[string, int]{Stale: func(k string, _ int) bool { return stale[k] }})
	c.Add("a", 1, 10)
	c.Add("b", 2, 10)
	stale["a"] = true
	if _, ok := c.Get("a"); ok {
		t.Fatal("a stale entry was served")
	}
	if n := c.GetEach(2, func(i int) string { return []string{"a", "b"}[i] }, func(int, int) {}); n != 1 {
		t.Fatalf("GetEach found %d, want b alone", n)
	}
	if s := c.Stats(); s.Entries != 1 || s.Bytes != 10 || s.Evictions != 1 {
		t.Fatalf("stats %+v", s)
	}
	c.Clear()
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 || s.Evictions != 1 {
		t.Fatalf("after Clear: %+v", s)
	}
}
