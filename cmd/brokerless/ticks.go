package main

import (
	"math/rand/v2"
	"strconv"
)

// tickGen generates synthetic market ticks: a symbol, used as the topic,
// and a quote line such as "AAPL bid=189.21 ask=189.23 bsz=300 asz=200".
// Each symbol's bid follows its own random walk. The same seed always
// gives the same ticks.
type tickGen struct {
	rng   *rand.Rand
	books []book
	buf   []byte
}

// book is one symbol's state; prices are in cents.
type book struct {
	symbol string
	bid    int64
}

// symbols and their starting bids, in cents.
var symbols = []book{
	{"AAPL", 18921}, {"MSFT", 41550}, {"GOOG", 17230}, {"AMZN", 18510},
	{"TSLA", 17680}, {"NVDA", 88040}, {"META", 50560}, {"NFLX", 61020},
	{"AMD", 16090}, {"INTC", 3140}, {"ORCL", 12570}, {"IBM", 19030},
	{"CSCO", 4820}, {"ADBE", 48010}, {"CRM", 29040}, {"QCOM", 17060},
}

// minBid keeps a walking price above one dollar.
const minBid = 100

func newTickGen(seed uint64) *tickGen {
	return &tickGen{
		rng:   rand.New(rand.NewPCG(seed, 0x7469636b73)),
		books: append([]book(nil), symbols...),
		buf:   make([]byte, 0, 64),
	}
}

// next returns the next tick. The payload is valid until the next call.
func (g *tickGen) next() (topic string, payload []byte) {
	b := &g.books[g.rng.IntN(len(g.books))]
	b.bid = max(b.bid+g.rng.Int64N(5)-2, minBid)
	ask := b.bid + 1 + g.rng.Int64N(3)
	p := append(g.buf[:0], b.symbol...)
	p = append(p, " bid="...)
	p = appendCents(p, b.bid)
	p = append(p, " ask="...)
	p = appendCents(p, ask)
	p = append(p, " bsz="...)
	p = strconv.AppendInt(p, 100*(1+g.rng.Int64N(10)), 10)
	p = append(p, " asz="...)
	p = strconv.AppendInt(p, 100*(1+g.rng.Int64N(10)), 10)
	g.buf = p
	return b.symbol, p
}

// appendCents appends a non-negative amount of cents as dollars, e.g.
// 18921 as 189.21.
func appendCents(b []byte, cents int64) []byte {
	b = strconv.AppendInt(b, cents/100, 10)
	c := cents % 100
	return append(b, '.', byte('0'+c/10), byte('0'+c%10))
}
