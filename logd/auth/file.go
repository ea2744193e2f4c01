package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FileFormat names the users file format; Decode refuses any other.
const FileFormat = "brokerless-logd-users/1"

// MaxFileBytes bounds a users file.
const MaxFileBytes = 16 << 20

// fileDoc is the JSON form of a users file (see the package doc).
type fileDoc struct {
	Format string     `json:"format"`
	Users  []fileUser `json:"users"`
}

type fileUser struct {
	Name  string                    `json:"name"`
	SCRAM map[string]fileCredential `json:"scram,omitempty"`
	Allow []string                  `json:"allow"`
}

// fileCredential's byte fields are standard base64 in JSON.
type fileCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// Decode parses a users file. Everything Users.Put checks is checked,
// plus the format name, unknown fields, duplicate users, trailing data
// and the grants' syntax.
func Decode(b []byte) (*Users, error) {
	if len(b) > MaxFileBytes {
		return nil, &FileError{Reason: fmt.Sprintf("larger than %d bytes", MaxFileBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var doc fileDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, &FileError{Reason: "not a users file: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &FileError{Reason: "data after the JSON document"}
	}
	if doc.Format != FileFormat {
		return nil, &FileError{Reason: fmt.Sprintf("format %q, want %q", doc.Format, FileFormat)}
	}
	us := NewUsers()
	for _, fu := range doc.Users {
		if _, dup := us.byName[fu.Name]; dup {
			return nil, &FileError{User: fu.Name, Reason: "listed twice"}
		}
		u := &User{Name: fu.Name}
		if len(fu.SCRAM) > 0 {
			u.SCRAM = make(map[string]Credential, len(fu.SCRAM))
		}
		for mech, c := range fu.SCRAM {
			u.SCRAM[mech] = Credential(c)
		}
		for _, s := range fu.Allow {
			g, err := ParseGrant(s)
			if err != nil {
				return nil, &FileError{User: fu.Name, Reason: err.Error()}
			}
			u.Grants = append(u.Grants, g)
		}
		if err := us.Put(u); err != nil {
			return nil, err
		}
	}
	return us, nil
}

// Encode renders users as a users file, sorted by name.
func Encode(us *Users) []byte {
	doc := fileDoc{Format: FileFormat, Users: []fileUser{}}
	for _, u := range us.List() {
		fu := fileUser{Name: u.Name, Allow: []string{}}
		if len(u.SCRAM) > 0 {
			fu.SCRAM = make(map[string]fileCredential, len(u.SCRAM))
		}
		for mech, c := range u.SCRAM {
			fu.SCRAM[mech] = fileCredential(c)
		}
		for _, g := range u.Grants {
			fu.Allow = append(fu.Allow, g.String())
		}
		doc.Users = append(doc.Users, fu)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // only plain strings, ints and byte slices: cannot fail
	}
	return append(b, '\n')
}

// unsafeModeBits are the permission bits Load refuses: any access by
// others, and write access by the group.
const unsafeModeBits = 0o027

// Load reads and decodes a users file. It refuses a file that others
// may read, or that others or its group may write (see the package
// doc), and anything but a regular file.
func Load(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &FileError{Path: path, Reason: "not a regular file"}
	}
	if perm := st.Mode().Perm(); perm&unsafeModeBits != 0 {
		return nil, &FileError{Path: path, Reason: fmt.Sprintf("mode %04o lets other users read or change it; chmod 600 it", perm)}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	us, err := Decode(b)
	var fe *FileError
	if errors.As(err, &fe) {
		fe.Path = path
	}
	return us, err
}

// Save writes users to path atomically, with mode 0600 and, where a
// file is there, its owner and group: a temporary file in the same
// directory, fsynced, renamed over path, and the directory fsynced.
func Save(path string, us *Users) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is there
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := keepOwner(tmp, path); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(Encode(us)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
