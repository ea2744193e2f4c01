package matrix

import (
	"fmt"
	"io"
	"strings"
)

// WriteTable writes the report as Markdown tables: per scenario, every
// contender's median over the rounds with its [min–max], and its ratio
// to its baseline (×base) and to its peer (×peer) from the same rounds.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "Machine: %s, %d cores, Linux %s, %s, commit %s; load average %s at the start, %s at the end.\n",
		r.Machine.CPU, r.Machine.Cores, r.Machine.Kernel, r.Machine.Go, r.Machine.Commit, r.Machine.Load, r.Machine.LoadAtEnd)
	fmt.Fprintf(w, "Mode: %s. %d measured rounds (median [min–max]) after %d warm-up round(s) discarded, interleaved; took %s.\n",
		r.Mode, r.Settings.Rounds, r.Settings.Warmup, r.Elapsed.Round(1e9))
	fmt.Fprintln(w, "×base, ×peer: the headline figure divided by the baseline's (peer's) in the same round, median [min–max] over the rounds.")
	byKind := map[Kind][]Cell{}
	var kinds []Kind
	for _, c := range r.Cells {
		if byKind[c.Kind] == nil {
			kinds = append(kinds, c.Kind)
		}
		byKind[c.Kind] = append(byKind[c.Kind], c)
	}
	for _, k := range kinds {
		cells := byKind[k]
		switch k {
		case Throughput, FanOut, Durability:
			r.wideTable(w, k, cells)
		default:
			for _, c := range cells {
				r.cellTable(w, c)
			}
		}
	}
	var notes []string
	for _, rr := range r.Results {
		if strings.HasPrefix(rr.Status, "failed") {
			notes = append(notes, fmt.Sprintf("- %s, %s: %s", rr.Contender, rr.Cell, rr.Status))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nFailures:\n%s\n", strings.Join(notes, "\n"))
	}
}

var kindTitle = map[Kind]string{
	Throughput: "Throughput: highest rate with no message lost, by payload size (msgs/s)",
	FanOut:     "Fan-out: highest rate with no message lost at any subscriber (msgs/s published)",
	Durability: "Durability: highest rate with no message lost, fsync before acknowledging or not (msgs/s)",
	Latency:    "Latency, open loop (one way, from the time each message was due)",
	PingPong:   "Ping-pong: round trip, one message in flight",
	Loss:       "Loss injected at each subscriber",
}

// kindNote says, under a table, what its ratios compare when the two
// sides do different work.
var kindNote = map[Kind]string{
	Throughput: sendsNote,
	FanOut:     sendsNote,
}

const sendsNote = "What each side sends: raw-udp and raw-mcast one message a datagram, raw-tcp one message a write; " +
	"mcast packs what queues while a send is in flight into datagrams of up to 1364 bytes of payload (zmq would with pack=on; this run leaves it off, as libzmq sends), " +
	"so at small sizes mcast's ×base compares packed datagrams with one-message datagrams: different work. " +
	"For the same datagrams (count and size) see `go test -run XXX -bench Limit ./multicast/` in the core module."

func (r *Report) wideTable(w io.Writer, k Kind, cells []Cell) {
	fmt.Fprintf(w, "\n### %s\n", kindTitle[k])
	var rows strings.Builder
	var n notes
	for _, ci := range r.Contenders {
		if r.inapplicable(ci.Name, cells, &n) {
			continue
		}
		fmt.Fprintf(&rows, "| %s |", ci.Name)
		for _, c := range cells {
			fmt.Fprintf(&rows, " %s |", r.entry(ci.Name, c, k.Headline(), &n))
		}
		fmt.Fprintln(&rows)
	}
	if rows.Len() > 0 {
		fmt.Fprint(w, "\n| contender |")
		for _, c := range cells {
			fmt.Fprintf(w, " %s |", columnName(c))
		}
		fmt.Fprint(w, "\n|---|")
		for range cells {
			fmt.Fprint(w, "---|")
		}
		fmt.Fprintf(w, "\n%s", rows.String())
	}
	n.write(w)
	if note := kindNote[k]; note != "" && rows.Len() > 0 {
		fmt.Fprintf(w, "\n%s\n", note)
	}
}

// notes are the reasons a table's contenders have no figure, written
// once under the table and referred to as [n] in it.
type notes struct {
	text []string
	skip map[string][]string // reason: contenders left out of the table
	keys []string
}

func (n *notes) ref(status string) string {
	what, _, _ := strings.Cut(status, ":")
	for i, t := range n.text {
		if t == status {
			return fmt.Sprintf("%s [%d]", what, i+1)
		}
	}
	n.text = append(n.text, status)
	return fmt.Sprintf("%s [%d]", what, len(n.text))
}

func (n *notes) write(w io.Writer) {
	if len(n.text) == 0 && len(n.skip) == 0 {
		return
	}
	fmt.Fprintln(w)
	for i, t := range n.text {
		fmt.Fprintf(w, "[%d] %s  \n", i+1, t)
	}
	for _, k := range n.keys {
		fmt.Fprintf(w, "Not in this table: %s (%s).  \n", strings.Join(n.skip[k], ", "), k)
	}
}

// inapplicable says whether the contender has nothing but "not
// applicable" in cells (then noted and left out of the table).
func (r *Report) inapplicable(name string, cells []Cell, n *notes) bool {
	var reason string
	for _, c := range cells {
		rr := r.Result(name, c.ID())
		if rr == nil || !strings.HasPrefix(rr.Status, "not applicable: ") || (reason != "" && rr.Status != reason) {
			return false
		}
		reason = rr.Status
	}
	if n.skip == nil {
		n.skip = map[string][]string{}
	}
	if n.skip[reason] == nil {
		n.keys = append(n.keys, reason)
	}
	n.skip[reason] = append(n.skip[reason], name)
	return true
}

func columnName(c Cell) string {
	switch c.Kind {
	case FanOut:
		return fmt.Sprintf("%d subscriber(s), %s", c.Subscribers, sizeName(c.Size))
	case Durability:
		if c.Durable {
			return "fsync, " + sizeName(c.Size)
		}
		return "no fsync, " + sizeName(c.Size)
	}
	return sizeName(c.Size)
}

// entry is a contender's headline figure in a cell, with its ratios.
func (r *Report) entry(name string, c Cell, m Metric, n *notes) string {
	rr := r.Result(name, c.ID())
	if rr == nil {
		return ""
	}
	if rr.Status != "ok" {
		return n.ref(rr.Status)
	}
	s := spread(rr.Summary[m.Name])
	if sp := rr.Summary[m.Name]; m.Name == "rate" && sp.Max == 0 {
		s = fmt.Sprintf("< %d", minRate) // no rate passed, down to the lowest probed
	}
	if rr.VsBaseline != nil {
		s += " " + ratio("base", *rr.VsBaseline)
	}
	if rr.VsPeer != nil {
		s += " " + ratio("peer", *rr.VsPeer)
	}
	return s
}

func (r *Report) cellTable(w io.Writer, c Cell) {
	ms := metricsOf[c.Kind]
	fmt.Fprintf(w, "\n### %s: %s, %s", kindTitle[c.Kind], sizeName(c.Size), fmt.Sprintf("%d subscriber(s)", c.Subscribers))
	if c.Rate > 0 {
		fmt.Fprintf(w, ", %.0f msgs/s", c.Rate)
	}
	if c.Loss > 0 {
		fmt.Fprintf(w, ", %g%% dropped", c.Loss*100)
	}
	fmt.Fprintln(w)
	header := func(w io.Writer) {
		fmt.Fprint(w, "\n| contender |")
		for _, m := range ms {
			fmt.Fprintf(w, " %s (%s) |", m.Name, m.Unit)
		}
		fmt.Fprintf(w, " ×base (%s) | ×peer |\n|---|", ms[0].Name)
		for range len(ms) + 2 {
			fmt.Fprint(w, "---|")
		}
		fmt.Fprintln(w)
	}
	out := w
	var rows strings.Builder
	w = &rows
	var n notes
	for _, ci := range r.Contenders {
		rr := r.Result(ci.Name, c.ID())
		if rr == nil || r.inapplicable(ci.Name, []Cell{c}, &n) {
			continue
		}
		fmt.Fprintf(w, "| %s |", ci.Name)
		if rr.Status != "ok" {
			fmt.Fprintf(w, " %s |%s\n", n.ref(rr.Status), strings.Repeat(" |", len(ms)+1))
			continue
		}
		for _, m := range ms {
			fmt.Fprintf(w, " %s |", spread(rr.Summary[m.Name]))
		}
		for _, v := range []*Spread{rr.VsBaseline, rr.VsPeer} {
			if v == nil {
				fmt.Fprint(w, " |")
			} else {
				fmt.Fprintf(w, " %s |", ratio("", *v))
			}
		}
		fmt.Fprintln(w)
	}
	if rows.Len() > 0 {
		header(out)
		fmt.Fprint(out, rows.String())
	}
	n.write(out)
}

func spread(s Spread) string {
	if s.N <= 1 || s.Min == s.Max {
		return num(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", num(s.Median), num(s.Min), num(s.Max))
}

func ratio(what string, s Spread) string {
	r := fmt.Sprintf("×%.2f", s.Median)
	if s.N > 1 && s.Min != s.Max {
		r += fmt.Sprintf(" [%.2f–%.2f]", s.Min, s.Max)
	}
	if what != "" {
		r += " " + what
	}
	return r
}

func num(v float64) string {
	switch a := max(v, -v); {
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a >= 100 || v == float64(int64(v)):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
