// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb
// and pg_ctl from Debian's /usr/lib/postgresql/*/bin, data and unix
// socket in a temporary directory, listening on a free port of
// 127.0.0.1. A test calling Start is skipped, with the reason, when
// PostgreSQL is not installed, unless BROKERLESS_INTEROP=1, where that
// fails it (.ci/install.d/75-postgres.sh installs it).
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/brokerless/brokerless/transport/peertest"
)

// Cluster is a running PostgreSQL server.
type Cluster struct {
	dir  string
	port int
	bin  string
	cred *syscall.Credential
	opts string // the server's options (pg_ctl -o)
	dbs  atomic.Int64
}

// Start starts a cluster, stopped and removed when t ends. settings are
// extra server settings ("fsync=off").
func Start(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		peertest.Missing(t, "PostgreSQL, no /usr/lib/postgresql/*/bin/initdb", "apt-get install postgresql (.ci/install.d/75-postgres.sh)")
	}
	sort.Strings(bins)
	c := &Cluster{bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "brokerless-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	// initdb refuses to run as root: run the server as the postgres user.
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	c.port = freePort(t)
	c.run(t, "initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", c.port, dir)
	for _, s := range settings {
		opts += " -c " + s
	}
	c.opts = opts
	c.run(t, "pg_ctl", "start", "-w", "-t", "60", "-D", c.data(), "-l", filepath.Join(dir, "server.log"), "-o", opts)
	t.Cleanup(func() {
		cmd := c.command("pg_ctl", "stop", "-m", "immediate", "-D", c.data())
		_ = cmd.Run()
	})
	return c
}

// Restart stops the server in pg_ctl's mode ("fast": every connection
// ended, the commits flushed; "immediate": as a crash) and starts it
// again on the same port and data, waiting until it accepts connections.
func (c *Cluster) Restart(t testing.TB, mode string) {
	t.Helper()
	c.run(t, "pg_ctl", "stop", "-w", "-m", mode, "-D", c.data())
	c.run(t, "pg_ctl", "start", "-w", "-t", "60", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-o", c.opts)
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

func (c *Cluster) run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := c.command(name, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		t.Fatalf("%s: %v\n%s\n%s", name, err, out, log)
	}
}

// PID is the cluster's postmaster's process id (the parent of its
// server processes).
func (c *Cluster) PID(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

// URL returns the address of database name.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// NewDatabase creates an empty database and returns its address.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test%d", c.dbs.Add(1))
	db, err := sql.Open("pgx", c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return c.URL(name)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
