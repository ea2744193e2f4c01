package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// Store is a directory of topics, each a fixed number of partitions,
// each partition a Log. All methods are safe for concurrent use.
type Store struct {
	cfg Config
	env *env

	mu      sync.Mutex
	topics  map[string]*topic
	closed  bool
	offsets *OffsetStore

	sealed chan *Log // compacted partitions that sealed a segment
	done   chan struct{}
	wg     sync.WaitGroup
}

// sealedQueue bounds the partitions waiting for a compaction on sealing;
// beyond it, the next periodic pass compacts them.
const sealedQueue = 64

type topic struct {
	meta  topicMeta
	cfg   TopicConfig // effective
	parts []*Log
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string
	Partitions int
	// Overrides are the topic's own settings; Config is what applies
	// (the overrides over the Store's defaults).
	Overrides, Config TopicConfig
}

// Open opens (creating if needed) the Store in cfg.Dir and every
// partition in it, running crash recovery on each.
func Open(cfg Config) (*Store, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := vfs.MkdirAllDurable(cfg.FS, cfg.Dir); err != nil {
		return nil, err
	}
	s := &Store{
		cfg: cfg,
		env: &env{
			fs: cfg.FS, fsync: cfg.Fsync, maxProducers: cfg.MaxProducers, producerExpiry: cfg.ProducerExpiry,
			compactMaxKeys: cfg.CompactMaxKeys, now: cfg.Now, logger: cfg.Logger, hooks: hooks(cfg.Hooks),
		},
		topics: map[string]*topic{},
		sealed: make(chan *Log, sealedQueue),
		done:   make(chan struct{}),
	}
	if cfg.MaintenanceInterval > 0 {
		s.env.sealed = func(l *Log) {
			select {
			case s.sealed <- l:
			default:
			}
		}
	}
	metas, found, err := readTopics(cfg.FS, cfg.Dir)
	if err != nil && !found && metas == nil {
		if errors.Is(err, ErrCorruptFile) {
			cfg.Logger.Warn("storage: topic metadata damaged and no partition directories", "err", err)
		} else {
			return nil, err
		}
	} else if !found && len(metas) > 0 {
		cfg.Logger.Warn("storage: topic metadata missing or damaged, rebuilt from partition directories (overrides lost)", "err", err, "topics", len(metas))
		if err := writeTopics(cfg.FS, cfg.Dir, metas); err != nil {
			return nil, err
		}
	}
	if found {
		if err := s.removeOrphans(metas); err != nil {
			return nil, err
		}
	}
	if s.offsets, err = openOffsetStore(cfg.offsets()); err != nil {
		return nil, err
	}
	for _, m := range metas {
		t, err := s.openTopic(m)
		if err != nil {
			s.closeLogs()
			s.offsets.close()
			return nil, fmt.Errorf("storage: opening topic %s: %w", m.Name, err)
		}
		s.topics[m.Name] = t
	}
	if cfg.Fsync == FsyncInterval {
		s.wg.Add(1)
		go s.every(cfg.FsyncInterval, s.syncAll)
	}
	if cfg.MaintenanceInterval > 0 {
		s.wg.Add(1)
		go s.maintain()
	}
	return s, nil
}

// maintain runs Maintain every MaintenanceInterval, and compacts a
// compacted partition as soon as it seals a segment.
func (s *Store) maintain() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.MaintenanceInterval)
	defer t.Stop()
	for {
		var err error
		select {
		case <-s.done:
			return
		case <-t.C:
			err = s.Maintain(s.cfg.Now())
		case l := <-s.sealed:
			_, err = l.Compact(s.cfg.Now())
		}
		if err != nil && !errors.Is(err, ErrClosed) {
			s.cfg.Logger.Error("storage: maintenance", "err", err)
		}
	}
}

// removeOrphans deletes partition directories that the metadata does
// not name: left by a DeleteTopic that stopped half way.
func (s *Store) removeOrphans(metas []topicMeta) error {
	counts := map[string]int{}
	for _, m := range metas {
		counts[m.Name] = m.Partitions
	}
	ents, err := s.cfg.FS.ReadDir(s.cfg.Dir)
	if err != nil {
		return err
	}
	for _, d := range ents {
		if name, p, ok := parsePartitionDir(d.Name()); ok && d.IsDir() && int(p) >= counts[name] {
			s.cfg.Logger.Info("storage: removing the directory of a deleted partition", "dir", d.Name())
			if err := s.cfg.FS.RemoveAll(filepath.Join(s.cfg.Dir, d.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) openTopic(m topicMeta) (*topic, error) {
	cfg := m.Overrides.over(s.cfg.topicDefaults())
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &topic{meta: m, cfg: cfg}
	for p := range m.Partitions {
		l, err := openLog(partitionDir(s.cfg.Dir, m.Name, int32(p)), m.Name, int32(p), cfg, s.env)
		if err != nil {
			for _, l := range t.parts {
				l.Close()
			}
			return nil, err
		}
		t.parts = append(t.parts, l)
	}
	return t, nil
}

// every calls f every d until the Store closes.
func (s *Store) every(d time.Duration, f func()) {
	defer s.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			f()
		}
	}
}

// logs returns every partition of every topic.
func (s *Store) logs() []*Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ls []*Log
	for _, t := range s.topics {
		ls = append(ls, t.parts...)
	}
	return ls
}

func (s *Store) syncAll() {
	for _, l := range s.logs() {
		l.Sync()
	}
}

// CreateTopic creates a topic with partitions partitions and the given
// overrides of the Store's defaults. ErrInvalidTopic for a name Kafka
// would refuse, ErrTopicExists if it exists, ErrInvalidPartitions for a
// count outside [1, MaxPartitions], ErrBadConfig for bad overrides.
func (s *Store) CreateTopic(name string, partitions int, overrides TopicConfig) error {
	if err := s.checkTopicArgs(name, partitions, overrides); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkTopicAbsent(name); err != nil {
		return err
	}
	m := topicMeta{Name: name, Partitions: partitions, Overrides: overrides}
	// Metadata first: a crash before the directories exist leaves a
	// topic whose partitions open empty.
	if err := writeTopics(s.cfg.FS, s.cfg.Dir, append(s.metas(), m)); err != nil {
		return err
	}
	t, err := s.openTopic(m)
	if err != nil {
		if werr := writeTopics(s.cfg.FS, s.cfg.Dir, s.metas()); werr != nil {
			s.cfg.Logger.Error("storage: undoing a failed CreateTopic", "topic", name, "err", werr)
		}
		return err
	}
	s.topics[name] = t
	return nil
}

// CheckCreateTopic returns the error CreateTopic would return for the
// same arguments now, and creates nothing: what Kafka's CreateTopics
// answers with validate_only.
func (s *Store) CheckCreateTopic(name string, partitions int, overrides TopicConfig) error {
	if err := s.checkTopicArgs(name, partitions, overrides); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkTopicAbsent(name)
}

// checkTopicArgs checks a new topic's name, partition count and
// overrides.
func (s *Store) checkTopicArgs(name string, partitions int, overrides TopicConfig) error {
	if !ValidTopicName(name) {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	if partitions < 1 || partitions > s.cfg.MaxPartitions {
		return fmt.Errorf("%w: %d", ErrInvalidPartitions, partitions)
	}
	return overrides.over(s.cfg.topicDefaults()).validate()
}

// checkTopicAbsent: the Store is open and holds no topic name. s.mu is
// held.
func (s *Store) checkTopicAbsent(name string) error {
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.topics[name]; ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	return nil
}

// metas returns the metadata of every topic, by name. s.mu is held.
func (s *Store) metas() []topicMeta {
	ms := make([]topicMeta, 0, len(s.topics)+1)
	for _, t := range s.topics {
		ms = append(ms, t.meta)
	}
	slices.SortFunc(ms, func(a, b topicMeta) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return ms
}

// DeleteTopic deletes a topic and its data. Its Logs return ErrClosed
// from then on.
func (s *Store) DeleteTopic(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTopicOrPartition, name)
	}
	delete(s.topics, name)
	// Metadata first: a crash before the directories are gone leaves
	// orphans that Open removes.
	if err := writeTopics(s.cfg.FS, s.cfg.Dir, s.metas()); err != nil {
		s.topics[name] = t
		return err
	}
	var errs []error
	for p, l := range t.parts {
		l.Close()
		errs = append(errs, s.cfg.FS.RemoveAll(partitionDir(s.cfg.Dir, name, int32(p))))
	}
	errs = append(errs, s.offsets.deleteTopic(name))
	return errors.Join(errs...)
}

// Topics describes every topic, sorted by name.
func (s *Store) Topics() []TopicInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	infos := make([]TopicInfo, 0, len(s.topics))
	for _, m := range s.metas() {
		t := s.topics[m.Name]
		infos = append(infos, TopicInfo{Name: m.Name, Partitions: m.Partitions, Overrides: m.Overrides, Config: t.cfg})
	}
	return infos
}

// PartitionCount is the number of partitions of all topics.
func (s *Store) PartitionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.topics {
		n += t.meta.Partitions
	}
	return n
}

// TopicPartitions is the partition count of the topic named name, 0
// and false if it does not exist. It allocates nothing (name is not
// copied), for scans of request frames.
func (s *Store) TopicPartitions(name []byte) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[string(name)]
	if !ok {
		return 0, false
	}
	return t.meta.Partitions, true
}

// Topic describes one topic; ok is false if it does not exist.
func (s *Store) Topic(name string) (TopicInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return TopicInfo{}, false
	}
	return TopicInfo{Name: name, Partitions: t.meta.Partitions, Overrides: t.meta.Overrides, Config: t.cfg}, true
}

// Partition returns a partition's Log, or ErrUnknownTopicOrPartition.
func (s *Store) Partition(topic string, p int32) (*Log, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	t, ok := s.topics[topic]
	if !ok || p < 0 || int(p) >= len(t.parts) {
		return nil, fmt.Errorf("%w: %s/%d", ErrUnknownTopicOrPartition, topic, p)
	}
	return t.parts[p], nil
}

// Close stops the background work and closes every partition, each
// flushed and checkpointed so the next Open verifies nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.wg.Wait()
	return errors.Join(s.closeLogs(), s.offsets.close())
}

// Offsets returns the store of consumer groups' committed offsets.
func (s *Store) Offsets() *OffsetStore { return s.offsets }

func (s *Store) closeLogs() error {
	var errs []error
	for _, t := range s.topics {
		for _, l := range t.parts {
			errs = append(errs, l.Close())
		}
	}
	return errors.Join(errs...)
}

// Maintain unfences every fenced partition it can (see Log.Unfence),
// applies retention and compaction to every partition as of now,
// forgets expired idempotent producers and expires consumer groups'
// offsets (OffsetStore.Expire). The background goroutine calls it every
// MaintenanceInterval.
func (s *Store) Maintain(now time.Time) error {
	var errs []error
	if _, err := s.offsets.Expire(now); err != nil && !errors.Is(err, ErrClosed) {
		errs = append(errs, err)
	}
	for _, l := range s.logs() {
		if l.Fenced() {
			if err := l.Unfence(); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		l.expireProducers(now)
		if _, err := l.ApplyRetention(now); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
		if _, err := l.Compact(now); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
