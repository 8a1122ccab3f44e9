package mvcc

import (
	"math/rand/v2"
	"testing"
)

func TestKeySet(t *testing.T) {
	one := func(k string) *watcher { return &watcher{key: []byte(k)} }
	rng := func(k, e string) *watcher { return &watcher{key: []byte(k), end: []byte(e)} }
	cases := []struct {
		name string
		ws   []*watcher
		in   []string
		out  []string
	}{
		{"none", nil, nil, []string{"", "a"}},
		{"one key", []*watcher{one("a")}, []string{"a"}, []string{"", "a\x00", "b", "\x00"}},
		{"prefix", []*watcher{rng("/p/", "/p0")}, []string{"/p/", "/p/x"}, []string{"/p", "/p0", "/q"}},
		{"from a key on", []*watcher{rng("m", "")}, []string{"m", "zz"}, []string{"l", ""}},
		{"every key", []*watcher{rng("", "")}, []string{"", "a", "\xff"}, nil},
		{"empty range", []*watcher{rng("b", "a"), rng("c", "c")}, nil, []string{"a", "b", "c"}},
		{"overlapping and nested", []*watcher{rng("a", "c"), rng("b", "e"), rng("b", "c"), one("d")},
			[]string{"a", "b", "d", "d\x00"}, []string{"e", "\x00"}},
		{"touching", []*watcher{rng("a", "b"), rng("b", "c")}, []string{"a", "b", "bz"}, []string{"c"}},
		{"unbounded swallows the rest", []*watcher{rng("b", ""), rng("c", "d"), one("a")},
			[]string{"a", "b", "z"}, []string{"a\x00", ""}},
	}
	for _, c := range cases {
		s := newKeySet(c.ws)
		for _, k := range c.in {
			if !s.has([]byte(k)) {
				t.Errorf("%s: %q left out", c.name, k)
			}
		}
		for _, k := range c.out {
			if s.has([]byte(k)) {
				t.Errorf("%s: %q taken", c.name, k)
			}
		}
	}
}

// TestKeySetAsWatchers holds the set to the watchers it was made of: a key is in it exactly
// when one of them matches it, for random sets of keys and ranges over a small alphabet.
func TestKeySetAsWatchers(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 11))
	key := func() []byte {
		b := make([]byte, r.IntN(4))
		for i := range b {
			b[i] = "ab\x00"[r.IntN(3)]
		}
		return b
	}
	for round := 0; round < 2000; round++ {
		ws := make([]*watcher, r.IntN(6))
		for i := range ws {
			w := &watcher{key: key()}
			switch r.IntN(3) {
			case 1:
				w.end = key()
			case 2:
				w.end = []byte{}
			}
			ws[i] = w
		}
		s := newKeySet(ws)
		for probe := 0; probe < 20; probe++ {
			k := key()
			want := false
			for _, w := range ws {
				want = want || w.matches(k)
			}
			if got := s.has(k); got != want {
				t.Fatalf("round %d: %q in the set %v, matched by a watcher %v", round, k, got, want)
			}
		}
	}
}
