package logd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/brokerless/brokerless/logd/auth"
)

// decoySecretFile, in the data directory, holds the secret that keys
// the decoy SCRAM credentials of user names that do not exist
// (auth.Config.DecoySecret), so that a decoy's salt stays the same
// across restarts, as a real user's does; a secret made fresh on each
// start would tell a client comparing salts which names are real.
// It is made (32 random bytes, hex, mode 0600) on the first start that
// requires authentication, and kept with the data: the users file may
// be rewritten, moved or shared between servers, the data directory is
// the server's own. Removing it only changes the decoys.
const decoySecretFile = "auth-decoy-secret"

// keepDecoySecret gives the authenticator the data directory's decoy
// secret, making it the first time, unless Config.Auth.DecoySecret was
// given or the server requires no authentication. Called once the data
// directory is locked.
func (a *serverAuth) keepDecoySecret(cfg Config) error {
	if a.authn == nil || cfg.Auth.DecoySecret != nil {
		return nil
	}
	secret, err := readDecoySecret(filepath.Join(cfg.Storage.Dir, decoySecretFile))
	if err != nil {
		return err
	}
	cfg.Auth.DecoySecret = secret
	authn, err := auth.New(cfg.Auth)
	if err != nil {
		return nestConfigError("Auth.", err)
	}
	a.authn = authn
	return nil
}

// readDecoySecret reads the secret kept at path, making one the first
// time.
func readDecoySecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		secret, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(secret) < auth.MinDecoySecretBytes {
			return nil, fmt.Errorf("logd: %s: corrupt (want %d bytes in hex); remove it to make a new one", path, auth.MinDecoySecretBytes)
		}
		return secret, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("logd: %w", err)
	}
	secret := make([]byte, auth.MinDecoySecretBytes)
	_, _ = rand.Read(secret)
	if err := writePrivateFile(path, []byte(hex.EncodeToString(secret)+"\n")); err != nil {
		return nil, err
	}
	return secret, nil
}

// writePrivateFile creates path, readable by its owner only, durably
// and atomically: a temporary file written and fsynced, renamed, and
// the directory fsynced.
func writePrivateFile(path string, data []byte) error {
	err := func() error {
		tmp := path + ".tmp"
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			os.Remove(tmp)
			return err
		}
		d, err := os.Open(filepath.Dir(path))
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}()
	if err != nil {
		return fmt.Errorf("logd: write %s: %w", path, err)
	}
	return nil
}
