package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ctlMsg is a request of the publisher side to the subscriber side, or
// its reply, one JSON object a line over the control connection.
type ctlMsg struct {
	Op        string `json:"op,omitempty"` // open-sub, open-pub, count, reset, close
	Contender string `json:"contender,omitempty"`
	Size      int    `json:"size,omitempty"`
	// Addr is where to connect, or "" to listen on the control
	// connection's local address.
	Addr  string `json:"addr,omitempty"`
	Echo  bool   `json:"echo,omitempty"`
	Ready uint64 `json:"ready,omitempty"`
	Got   uint64 `json:"got,omitempty"`
	Err   string `json:"err,omitempty"`
}

// ServeSub is the subscriber side of two-machine mode: it takes the
// publisher side's control connections from ln, one at a time, until
// ctx is done, and opens, counts and echoes what they ask.
func ServeSub(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		err = serveCtl(ctx, c)
		c.Close()
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "bench sub:", err)
		}
	}
}

type subSide struct {
	host         string
	wg           sync.WaitGroup
	rctx         context.Context
	stop         context.CancelFunc
	closers      []io.Closer
	echo         atomic.Pointer[Link]
	ready, got   atomic.Uint64
	mu           sync.Mutex
	runErr       error
	contendersBy map[string]Contender
}

func serveCtl(ctx context.Context, c net.Conn) error {
	host, _, _ := net.SplitHostPort(c.LocalAddr().String())
	s := &subSide{host: host, contendersBy: map[string]Contender{}}
	for _, x := range Contenders() {
		s.contendersBy[x.Name()] = x
	}
	defer s.closeAll()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	dec, enc := json.NewDecoder(c), json.NewEncoder(c)
	for {
		var m ctlMsg
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		reply, err := s.do(ctx, m)
		if err != nil {
			reply.Err = err.Error()
		}
		if err := enc.Encode(reply); err != nil {
			return err
		}
	}
}

func (s *subSide) do(ctx context.Context, m ctlMsg) (ctlMsg, error) {
	switch m.Op {
	case "count":
		s.mu.Lock()
		defer s.mu.Unlock()
		return ctlMsg{Ready: s.ready.Load(), Got: s.got.Load()}, s.runErr
	case "reset":
		s.got.Store(0)
		return ctlMsg{}, nil
	case "close":
		s.closeAll()
		return ctlMsg{}, nil
	case "open-sub", "open-pub":
	default:
		return ctlMsg{}, fmt.Errorf("unknown op %q", m.Op)
	}
	c, ok := s.contendersBy[m.Contender].(remote)
	if !ok {
		return ctlMsg{}, fmt.Errorf("%s: not available in two-machine mode", m.Contender)
	}
	addr := m.Addr
	if addr == "" {
		addr = s.host
	}
	o := Options{Size: m.Size, Subscribers: 1}
	if m.Op == "open-pub" {
		l, a, err := c.OpenPub(ctx, o, addr)
		if err != nil {
			return ctlMsg{}, err
		}
		s.closers = append(s.closers, l)
		if m.Echo {
			s.echo.Store(&l)
		}
		return ctlMsg{Addr: a}, nil
	}
	sub, cl, a, err := c.OpenSub(ctx, o, addr)
	if err != nil {
		return ctlMsg{}, err
	}
	s.closers = append(s.closers, cl)
	if s.stop == nil {
		s.rctx, s.stop = context.WithCancel(ctx)
	}
	ctx = s.rctx
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := sub.Run(ctx, func(p []byte) {
			if l := s.echo.Load(); l != nil {
				if (*l).Send(p) == nil {
					_ = (*l).Flush()
				}
				return
			}
			if seq, _, ok := unstamp(p); ok && seq == 0 {
				s.ready.Add(1)
			} else {
				s.got.Add(1)
			}
		})
		if err != nil {
			s.mu.Lock()
			s.runErr = err
			s.mu.Unlock()
		}
	}()
	return ctlMsg{Addr: a}, nil
}

func (s *subSide) closeAll() {
	if s.stop != nil {
		s.stop()
	}
	for _, c := range s.closers {
		c.Close()
	}
	s.wg.Wait()
	s.stop, s.closers = nil, nil
	s.echo.Store(nil)
	s.ready.Store(0)
	s.got.Store(0)
	s.runErr = nil
}

// pubSide is the publisher side's control connection.
type pubSide struct {
	host string
	dec  *json.Decoder
	enc  *json.Encoder
}

func (p *pubSide) ask(m ctlMsg) (ctlMsg, error) {
	if err := p.enc.Encode(m); err != nil {
		return ctlMsg{}, err
	}
	var r ctlMsg
	if err := p.dec.Decode(&r); err != nil {
		return ctlMsg{}, err
	}
	if r.Err != "" {
		return r, fmt.Errorf("subscriber side: %s", r.Err)
	}
	return r, nil
}

// fwd opens c's publisher here and its subscriber on the far side.
func (p *pubSide) fwd(ctx context.Context, c Contender, o Options) (Link, error) {
	rc := c.(remote)
	if rc.SubListens() {
		r, err := p.ask(ctlMsg{Op: "open-sub", Contender: c.Name(), Size: o.Size})
		if err != nil {
			return nil, err
		}
		l, _, err := rc.OpenPub(ctx, o, r.Addr)
		return l, err
	}
	l, a, err := rc.OpenPub(ctx, o, p.host)
	if err != nil {
		return nil, err
	}
	if _, err := p.ask(ctlMsg{Op: "open-sub", Contender: c.Name(), Size: o.Size, Addr: a}); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// back opens a publisher on the far side, echoing what its subscriber
// gets, and its subscriber here.
func (p *pubSide) back(ctx context.Context, c Contender, o Options) (Sub, io.Closer, error) {
	rc := c.(remote)
	if rc.SubListens() {
		s, cl, a, err := rc.OpenSub(ctx, o, p.host)
		if err != nil {
			return nil, nil, err
		}
		if _, err := p.ask(ctlMsg{Op: "open-pub", Contender: c.Name(), Size: o.Size, Addr: a, Echo: true}); err != nil {
			cl.Close()
			return nil, nil, err
		}
		return s, cl, nil
	}
	r, err := p.ask(ctlMsg{Op: "open-pub", Contender: c.Name(), Size: o.Size, Echo: true})
	if err != nil {
		return nil, nil, err
	}
	s, cl, _, err := rc.OpenSub(ctx, o, r.Addr)
	return s, cl, err
}

// twoMachineMode is the Report's Mode in two-machine mode.
const twoMachineMode = "two-machine"

// RunPub is the publisher side of two-machine mode: it connects to the
// subscriber side's control address and measures, for each contender
// that runs across two machines, the throughput the far side counted
// (Settings.Size, one subscriber) and ping-pong round trips (the far
// side echoes; no clock sync), in interleaved rounds.
func RunPub(ctx context.Context, set Settings, control string, progress Progress) (*Report, error) {
	if err := set.validate(); err != nil {
		return nil, err
	}
	var conn net.Conn
	var err error
	deadline := time.Now().Add(set.ReadyTimeout)
	for {
		var d net.Dialer
		if conn, err = d.DialContext(ctx, "tcp", control); err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if err != nil {
		return nil, fmt.Errorf("control connection to the subscriber side: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	host, _, _ := net.SplitHostPort(conn.LocalAddr().String())
	fmt.Fprintf(os.Stderr, "bench pub: connected to the sub side at %s from %s; this side's data sockets listen on %s\n", control, conn.LocalAddr(), host)
	p := &pubSide{host: host, dec: json.NewDecoder(conn), enc: json.NewEncoder(conn)}

	cs := selectContenders(Contenders(), set.Contenders)
	defer func() {
		for _, c := range cs {
			if cl, ok := c.(io.Closer); ok {
				cl.Close()
			}
		}
	}()
	set.Kinds = []Kind{Throughput, PingPong}
	set.Sizes, set.FanOut, set.Rates, set.Losses = []int{set.Size}, nil, nil, nil
	rep := &Report{Command: os.Args, Started: time.Now().UTC(),
		Mode:    fmt.Sprintf("%s: publisher side here (%s), subscriber side at %s; throughput counted by the subscriber side, round trips by ping-pong (it echoes), so no clock sync", twoMachineMode, host, control),
		Machine: ThisMachine(), Settings: set,
		Cells: []Cell{{Kind: Throughput, Size: set.Size, Subscribers: 1}, {Kind: PingPong, Size: set.Size, Subscribers: 1}}}
	for _, c := range cs {
		rep.Contenders = append(rep.Contenders, ContenderInfo{Name: c.Name(), Baseline: c.Baseline(), Peer: c.Peer()})
	}
	r := &runner{set: set}
	res := make([][]*Result, len(rep.Cells))
	for ci, cell := range rep.Cells {
		for _, c := range cs {
			st := "ok"
			if _, ok := c.(remote); !ok {
				st = notRemote(c)
			} else if err := can(c, cell); err != nil {
				st = err.Error()
			}
			res[ci] = append(res[ci], &Result{Contender: c.Name(), Cell: cell.ID(), Status: st})
		}
	}
	measure := func(ctx context.Context, c Contender, cell Cell, _ int) (outcome, error) {
		out, err := r.remoteMeasure(ctx, p, c, cell)
		if _, cerr := p.ask(ctlMsg{Op: "close"}); cerr != nil && err == nil {
			err = cerr
		}
		return out, err
	}
	if err := r.interleave(ctx, rep, cs, res, measure, progress, " (two machines)"); err != nil {
		return nil, err
	}
	return rep, nil
}

func (r *runner) remoteMeasure(ctx context.Context, p *pubSide, c Contender, cell Cell) (outcome, error) {
	o := cell.Options(0, r.set.Seed)
	l, err := p.fwd(ctx, c, o)
	if err != nil {
		return outcome{}, err
	}
	defer l.Close()
	buf := make([]byte, cell.Size)
	if cell.Kind == PingPong {
		return r.remotePingPong(ctx, p, c, o, l, cell.Size)
	}
	// Ready: a message of sequence 0 reached the far side.
	if err := r.waitReady(ctx, func(time.Duration) (bool, error) {
		stamp(buf, 0, now())
		if err := l.Send(buf); err != nil {
			return false, err
		}
		if err := l.Flush(); err != nil {
			return false, err
		}
		m, err := p.ask(ctlMsg{Op: "count"})
		return m.Ready > 0, err
	}); err != nil {
		return outcome{}, err
	}
	rate, err := r.searchWith(ctx, func(rate float64) (bool, error) {
		return r.remoteProbe(ctx, p, l, buf, rate, r.probeTime(c))
	})
	if err != nil {
		return outcome{}, err
	}
	return rateOutcome(cell, rate), nil
}

// waitReady calls try, waiting twice as long each time (20 ms up to a
// second), until it says yes or Settings.ReadyTimeout passed.
func (r *runner) waitReady(ctx context.Context, try func(wait time.Duration) (bool, error)) error {
	deadline := time.Now().Add(r.set.ReadyTimeout)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		ok, err := try(wait)
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing reached the far side in %v", r.set.ReadyTimeout)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// remoteProbe sends at rate for probeTime and asks the far
// side how many arrived: it passes if all did and the publisher kept to
// the rate (within 10%).
func (r *runner) remoteProbe(ctx context.Context, p *pubSide, l Link, buf []byte, rate float64, probeTime time.Duration) (bool, error) {
	if _, err := p.ask(ctlMsg{Op: "reset"}); err != nil {
		return false, err
	}
	n := int(rate * probeTime.Seconds())
	n = max(min(n, r.set.MaxProbeMessages, max(r.set.MaxProbeBytes/len(buf), 1)), 20)
	start := now()
	for i := range n {
		due := start + int64(float64(i)/rate*1e9)
		if d := due - now(); d > 0 {
			if err := l.Flush(); err != nil {
				return false, err
			}
			if d > int64(50*time.Microsecond) {
				time.Sleep(time.Duration(d))
			}
		}
		stamp(buf, uint64(i+1), due)
		if err := l.Send(buf); err != nil {
			return false, err
		}
	}
	if err := l.Flush(); err != nil {
		return false, err
	}
	took := now() - start
	// Drain: ask until all arrived or nothing more did for probeQuiet.
	var got uint64
	last := time.Now()
	for ctx.Err() == nil && got < uint64(n) && time.Since(last) < probeQuiet {
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		m, err := p.ask(ctlMsg{Op: "count"})
		if err != nil {
			return false, err
		}
		if m.Got > got {
			got, last = m.Got, time.Now()
		}
	}
	planned := float64(n-1) / rate * 1e9
	keptUp := float64(took) <= planned*1.1+float64(2*time.Millisecond)
	return got == uint64(n) && keptUp, ctx.Err()
}

func (r *runner) remotePingPong(ctx context.Context, p *pubSide, c Contender, o Options, fwd Link, size int) (outcome, error) {
	back, cl, err := p.back(ctx, c, o)
	if err != nil {
		return outcome{}, err
	}
	defer cl.Close()
	pi := newPinger(fwd, size)
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = back.Run(rctx, pi.receive)
	}()
	defer func() { stop(); wg.Wait() }()
	if ok, err := pi.ready(ctx, r.set.ReadyTimeout); err != nil || !ok {
		return outcome{}, errors.Join(err, readyErr(ok, r.set.ReadyTimeout))
	}
	return pi.series(ctx, r.set.PingPongs, r.set.PingTimeout)
}
