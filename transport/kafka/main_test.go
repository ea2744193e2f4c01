package kafka

import (
	"fmt"
	"os"
	"testing"
)

// Some tests need a process they can kill with SIGKILL: they run this
// test binary again, with envChild naming the role the child plays.
const envChild = "BROKERLESS_KAFKA_TEST_CHILD"

func TestMain(m *testing.M) {
	switch role := os.Getenv(envChild); role {
	case "":
		os.Exit(m.Run())
	case "logd":
		os.Exit(runLogdChild())
	case "consumer":
		os.Exit(runConsumerChild())
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: unknown role\n", envChild, role)
		os.Exit(2)
	}
}
