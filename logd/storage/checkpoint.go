package storage

import (
	"encoding/binary"
	"hash/crc32"
	"path/filepath"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// Small state files (recovery point, producer state, topic metadata)
// are replaced atomically: written to a temporary file, fsynced, renamed
// over the old one, and the directory fsynced. Each ends with the
// CRC-32C of what precedes it, so a damaged file is told from a good one.

const tmpSuffix = ".tmp"

// writeStateFile atomically replaces path with payload + CRC.
func writeStateFile(fsys vfs.FS, path string, payload []byte) error {
	return writeFileAtomic(fsys, path, binary.BigEndian.AppendUint32(payload[:len(payload):len(payload)], crc32.Checksum(payload, castagnoli)))
}

// WriteFileAtomic replaces path with data durably: it writes and fsyncs
// path+".tmp", renames it over path and fsyncs the directory, so after a
// crash path holds either the old or the new contents.
func WriteFileAtomic(path string, data []byte) error { return writeFileAtomic(vfs.OS, path, data) }

func writeFileAtomic(fsys vfs.FS, path string, data []byte) error {
	tmp := path + tmpSuffix
	if err := vfs.WriteFile(fsys, tmp, data); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}

// readStateFile returns the payload of a file written by writeStateFile;
// os.ErrNotExist if there is none, ErrCorruptFile if its CRC fails.
func readStateFile(fsys vfs.FS, path string) ([]byte, error) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	if len(b) < 4 {
		return nil, corruptFile(path, "too short")
	}
	p := b[:len(b)-4]
	if crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(b[len(p):]) {
		return nil, corruptFile(path, "CRC mismatch")
	}
	return p, nil
}

// recoveryPointFile names the checkpoint of a partition: every batch
// below the offset it holds was fsynced, with its segment's indexes.
const recoveryPointFile = "recovery-point"

const recoveryPointVersion = 1

func writeRecoveryPoint(fsys vfs.FS, dir string, off int64) error {
	b := []byte{recoveryPointVersion}
	return writeStateFile(fsys, filepath.Join(dir, recoveryPointFile), binary.BigEndian.AppendUint64(b, uint64(off)))
}

// readRecoveryPoint returns 0 (verify everything) when the file is
// missing or damaged.
func readRecoveryPoint(fsys vfs.FS, dir string) (int64, error) {
	p, err := readStateFile(fsys, filepath.Join(dir, recoveryPointFile))
	if err != nil {
		return 0, err
	}
	if len(p) != 9 || p[0] != recoveryPointVersion {
		return 0, corruptFile(recoveryPointFile, "bad length or version")
	}
	return int64(binary.BigEndian.Uint64(p[1:])), nil
}
