package kafka

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
)

// runLogdChild serves logd over the directory named by envLogdDir, with
// fsync always (an acknowledged produce is on disk), on the listener
// the parent passed as file descriptor 3.
func runLogdChild() int {
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := logd.Config{Storage: storage.Config{Dir: os.Getenv(envLogdDir), Fsync: storage.FsyncAlways}}
	fastGroups(&cfg)
	srv, err := logd.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_ = srv.Serve(ln)
	return 0
}

const envLogdDir = "BROKERLESS_KAFKA_TEST_LOGD_DIR"

// childLogd is a logd in a child process, on a listener this process
// holds: the address stays the same across restarts, and clients that
// connect while no child runs wait in the listener's backlog.
type childLogd struct {
	t    testing.TB
	addr string
	dir  string
	ln   *os.File // the listening socket, passed to each child
	cmd  *exec.Cmd
}

// startChildLogd starts logd in a child process; the test's cleanup
// kills it.
func startChildLogd(t testing.TB) *childLogd {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close() // f is a duplicate: the socket stays open
	if err != nil {
		t.Fatal(err)
	}
	c := &childLogd{t: t, addr: ln.Addr().String(), dir: t.TempDir(), ln: f}
	t.Cleanup(func() {
		c.kill()
		f.Close()
	})
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// start runs a child and returns once it serves.
func (c *childLogd) start() error {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=logd", envLogdDir+"="+c.dir)
	cmd.ExtraFiles = []*os.File{c.ln}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmd = cmd
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		return fmt.Errorf("child logd said %q: %v", line, err)
	}
	return nil
}

// kill ends the child with SIGKILL, as a crash would.
func (c *childLogd) kill() {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
	c.cmd = nil
}

// restart is Pair.RestartServer: SIGKILL, then a new child over the
// same directory and listener.
func (c *childLogd) restart() error {
	c.kill()
	return c.start()
}
