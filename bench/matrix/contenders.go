package matrix

// Contenders are every contender, in table order: the raw baselines,
// then ours, each followed by the peers it is measured against.
func Contenders() []Contender {
	return []Contender{
		rawUDP{}, rawMcast{}, rawMcastNS{}, rawTCP{},
		mcast{}, libzmqEPGM{},
		zmqOurs{}, libzmqTCP{}, &natsCore{},
		&logdOurs{}, &jetStream{},
		statsdOurs{}, &etsyStatsd{}, &statsdExporter{},
		httpLoop{}, webhookOurs{},
	}
}
