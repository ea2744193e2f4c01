package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// maxTopicLen is Kafka's limit on a topic name.
const maxTopicLen = 249

// ValidTopicName reports whether Kafka would accept name: 1 to 249
// bytes of [a-zA-Z0-9._-], and not "." or "..".
func ValidTopicName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > maxTopicLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// partitionDir is Kafka's partition directory name: <topic>-<partition>.
func partitionDir(root, topic string, p int32) string {
	return filepath.Join(root, topic+"-"+strconv.Itoa(int(p)))
}

// parsePartitionDir splits a partition directory name; the partition is
// after the last '-'.
func parsePartitionDir(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || !ValidTopicName(name[:i]) {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// The topic metadata file: every topic's partition count and overrides,
// JSON with a CRC (see checkpoint.go), replaced atomically.
const (
	topicsFile    = "topics"
	topicsVersion = 1
)

type topicsMeta struct {
	Version int         `json:"version"`
	Topics  []topicMeta `json:"topics"`
}

type topicMeta struct {
	Name       string      `json:"name"`
	Partitions int         `json:"partitions"`
	Overrides  TopicConfig `json:"overrides"`
}

func writeTopics(fsys vfs.FS, dir string, ts []topicMeta) error {
	b, err := json.Marshal(topicsMeta{Version: topicsVersion, Topics: ts})
	if err != nil {
		return err
	}
	return writeStateFile(fsys, filepath.Join(dir, topicsFile), b)
}

// readTopics returns the topics recorded in dir. When the file is
// missing or damaged, found is false and the topics are rebuilt from
// the partition directories (partition count from the highest number,
// overrides lost), with a warning from the caller.
func readTopics(fsys vfs.FS, dir string) (ts []topicMeta, found bool, err error) {
	p, err := readStateFile(fsys, filepath.Join(dir, topicsFile))
	if err == nil {
		var m topicsMeta
		if err = json.Unmarshal(p, &m); err == nil && m.Version != topicsVersion {
			err = fmt.Errorf("version %d", m.Version)
		}
		if err == nil {
			for _, t := range m.Topics {
				if !ValidTopicName(t.Name) || t.Partitions < 1 {
					err = fmt.Errorf("bad topic %q", t.Name)
				}
			}
		}
		if err == nil {
			return m.Topics, true, nil
		}
		err = corruptFile(topicsFile, err.Error())
	} else if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	names, rerr := fsys.ReadDir(dir)
	if rerr != nil {
		return nil, false, rerr
	}
	counts := map[string]int{}
	var order []string
	for _, d := range names {
		if !d.IsDir() {
			continue
		}
		if name, p, ok := parsePartitionDir(d.Name()); ok {
			if _, seen := counts[name]; !seen {
				order = append(order, name)
			}
			counts[name] = max(counts[name], int(p)+1)
		}
	}
	for _, n := range order {
		ts = append(ts, topicMeta{Name: n, Partitions: counts[n]})
	}
	return ts, false, err
}
