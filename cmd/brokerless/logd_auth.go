package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/auth"
)

// logdAuthFlags are logd's TLS and authentication flags.
type logdAuthFlags struct {
	cert, key, clientCA string
	users               string
	mechanisms          []string
}

func addLogdAuthFlags(fs *pflag.FlagSet) *logdAuthFlags {
	f := &logdAuthFlags{}
	fs.StringVar(&f.cert, "tls-cert", "", "serve Kafka clients over TLS with this PEM certificate (chain) ...")
	fs.StringVar(&f.key, "tls-key", "", "... and this PEM private key")
	fs.StringVar(&f.clientCA, "tls-client-ca", "", "require client certificates signed by these PEM CAs; a certificate's subject CN names its user")
	fs.StringVar(&f.users, "users", "", "require authentication by these users (SASL or client certificate) and enforce their grants; made with 'brokerless logd user add'")
	fs.StringSliceVar(&f.mechanisms, "sasl-mechanisms", auth.Mechanisms, "SASL mechanisms offered with --users")
	return f
}

// apply checks the flags, loads the certificates and the users file
// into cfg, and returns the listener's TLS config (nil without
// --tls-cert) and a line describing what clients must do (empty when
// nothing is required). Every fault is a usage error naming its flag.
func (f *logdAuthFlags) apply(fs *pflag.FlagSet, cfg *logd.Config) (*tls.Config, string, error) {
	switch {
	case (f.cert == "") != (f.key == ""):
		return nil, "", usagef("--tls-cert and --tls-key go together")
	case f.clientCA != "" && f.cert == "":
		return nil, "", usagef("--tls-client-ca needs --tls-cert and --tls-key")
	case fs.Changed("sasl-mechanisms") && f.users == "":
		return nil, "", usagef("--sasl-mechanisms needs --users")
	}
	var (
		tc    *tls.Config
		notes []string
	)
	if f.cert != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, "", usagef("--tls-cert %s, --tls-key %s: %v", f.cert, f.key, err)
		}
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		notes = append(notes, "TLS")
	}
	if f.clientCA != "" {
		pem, err := os.ReadFile(f.clientCA)
		if err != nil {
			return nil, "", usagef("--tls-client-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, "", usagef("--tls-client-ca %s: no PEM certificate in it", f.clientCA)
		}
		tc.ClientAuth, tc.ClientCAs = tls.RequireAndVerifyClientCert, pool
		notes = append(notes, "client certificates required")
	}
	if f.users != "" {
		for i, m := range f.mechanisms {
			if !slices.Contains(auth.Mechanisms, m) || slices.Contains(f.mechanisms[:i], m) {
				return nil, "", usagef("--sasl-mechanisms %q: want some of %s, each once", m, strings.Join(auth.Mechanisms, ","))
			}
		}
		if len(f.mechanisms) == 0 {
			return nil, "", usagef("--sasl-mechanisms: want at least one of %s", strings.Join(auth.Mechanisms, ","))
		}
		users, err := auth.Load(f.users)
		var fe *auth.FileError
		switch {
		case errors.As(err, &fe), errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
			return nil, "", usagef("--users: %v", err)
		case err != nil:
			return nil, "", err
		}
		cfg.Auth = auth.Config{Users: users, Mechanisms: f.mechanisms}
		plural := "s"
		if users.Len() == 1 {
			plural = ""
		}
		notes = append(notes, fmt.Sprintf("authentication required (%d user%s from %s; SASL %s)", users.Len(), plural, f.users, strings.Join(f.mechanisms, ", ")))
		if tc == nil {
			notes = append(notes, "WARNING: without --tls-cert, SASL runs unencrypted and PLAIN sends passwords in the clear")
		}
	} else if tc != nil && tc.ClientCAs != nil {
		notes = append(notes, "any client with a valid certificate may do anything (no --users)")
	}
	if len(notes) == 0 {
		return nil, "", nil
	}
	return tc, "logd: " + strings.Join(notes, ", "), nil
}
