package multicast

// spin polls the group socket without waiting (Config.Spin), from a
// Receive reading for itself, until datagrams come, a wake-up (a
// unicast datagram, a Receive whose context ended), the reader's
// deadline (the engine's next timer, a datagram the filter holds), or
// Spin has passed. It returns what a read returns; 0 entries and no
// error send step on to the read that waits.
func (s *Subscriber) spin() (int, error) {
	r := s.rd
	end := s.cfg.Now().Add(s.cfg.Spin)
	if d := s.deadline(); !d.IsZero() && d.Before(end) {
		end = d
	}
	for {
		n, err := r.rb.readNow()
		s.local.SpinReads++
		if n > 0 {
			s.local.SpinHits++
		}
		if n > 0 || err != nil || s.woken.Load() || !s.inbox.empty() || !s.cfg.Now().Before(end) {
			return n, err
		}
	}
}
