// Package authtest makes throwaway TLS certificates for tests of logd's
// TLS and authentication: a certificate authority created for one test,
// a server certificate for 127.0.0.1, and client certificates whose
// subject common names name users. Keys live in the test's temporary
// directory and die with it; none is ever committed.
package authtest
